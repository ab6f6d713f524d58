"""What the turn layer shows and says besides the model's speech.

Three outputs with one thing in common: the coordinator decides *when*, and
these only deliver. :class:`TurnOutputs` keeps the device's
:class:`Activity` (the LEDs follow it through ``on_activity``), plays named
earcons on the engine, and writes the ``turn_done`` journal line (handing
the record to ``on_turn_done``, for ``huxleyctl status``).

It may touch: the engine's earcon player and the two callbacks. It holds no
turn state and never awaits.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping

from huxleyd.audio.types import Earcon
from huxleyd.logs import get_logger
from huxleyd.turns.ports import AudioPort
from huxleyd.turns.state import TurnRecord

log = get_logger("huxleyd.turns")


class Activity(enum.StrEnum):
    """What the device is doing, for the LEDs (a coarser view than TurnState).

    A ``StrEnum``: the value is the journal's ``HUXLEY_STATE``, the ``watch``
    feed's ``state`` and ``huxleyctl status``'s text, unchanged."""

    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    MEDIA = "media"
    CALL = "call"
    """A skill holds the microphone (InputClaim)."""
    OFFLINE = "offline"
    """The button was pressed while the provider is unreachable: nothing listens."""
    MUTED = "muted"
    """The microphone is muted (``huxleyctl mute``, a long silent hold): nothing listens."""


class TurnOutputs:
    """Activity, earcons and the turn journal of one coordinator."""

    def __init__(
        self,
        audio: AudioPort,
        earcons: Mapping[str, bytes],
        *,
        on_activity: Callable[[Activity], None] | None = None,
        on_turn_done: Callable[[TurnRecord], None] | None = None,
    ) -> None:
        self._audio = audio
        self._earcons = earcons
        """Read at each play, not copied: the owner's mapping may change."""
        self._on_activity = on_activity
        self._on_turn_done = on_turn_done
        self.activity = Activity.IDLE

    def earcon(self, name: Earcon, *, before_speech: bool) -> None:
        """Play the earcon ``name`` if the persona has one (else nothing).

        ``before_speech``: model speech queued after it waits until it has played."""
        pcm = self._earcons.get(name)
        if pcm:
            self._audio.play_earcon(pcm, before_speech=before_speech)

    def show(self, activity: Activity) -> None:
        """Set the activity; ``on_activity`` hears of changes only."""
        if activity != self.activity:
            self.activity = activity
            if self._on_activity is not None:
                self._on_activity(activity)

    def journal(self, turn: TurnRecord) -> None:
        """A turn ended: one ``turn_done`` line with its timings, then ``on_turn_done``."""
        log.info(
            "turn_done",
            turn=turn.turn_id,
            source=turn.source,
            outcome=turn.outcome.value if turn.outcome else None,
            tools=",".join(turn.tools) or None,
            retries=turn.retries,
            audio_sent_ms=round(turn.audio_sent_ms),
            **turn.timings_ms(),
        )
        if self._on_turn_done is not None:
            self._on_turn_done(turn)
