"""What the turn layer shows and says besides the model's speech.

Three outputs with one thing in common: the coordinator decides *when*, and
these only deliver. :class:`TurnOutputs` keeps the device's
:class:`~huxleyd.turns.news.Activity` (published as
:class:`~huxleyd.turns.news.ActivityChanged`: the LEDs, systemd's status line
and ``watch`` follow it), plays named earcons on the engine, and writes the
``turn_done`` journal line (then publishes
:class:`~huxleyd.turns.news.TurnEnded`).

It may touch: the engine's earcon player and the coordinator's ``publish``.
It holds no turn state and never awaits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from huxleyd.audio.types import Earcon
from huxleyd.logs import get_logger
from huxleyd.turns.news import Activity, ActivityChanged, TurnEnded, TurnNews
from huxleyd.turns.ports import AudioPort
from huxleyd.turns.state import TurnRecord

log = get_logger("huxleyd.turns")


__all__ = ["Activity", "TurnOutputs"]


class TurnOutputs:
    """Activity, earcons and the turn journal of one coordinator."""

    def __init__(
        self,
        audio: AudioPort,
        earcons: Mapping[str, bytes],
        *,
        publish: Callable[[TurnNews], None] | None = None,
    ) -> None:
        self._audio = audio
        self._earcons = earcons
        """Read at each play, not copied: the owner's mapping may change."""
        self._publish = publish
        """The coordinator's bus (``Bus.publish``); None: nobody listens (tests)."""
        self.activity = Activity.IDLE

    def earcon(self, name: Earcon, *, before_speech: bool) -> None:
        """Play the earcon ``name`` if the persona has one (else nothing).

        ``before_speech``: model speech queued after it waits until it has played."""
        pcm = self._earcons.get(name)
        if pcm:
            self._audio.play_earcon(pcm, before_speech=before_speech)

    def show(self, activity: Activity) -> None:
        """Set the activity; :class:`ActivityChanged` is published on changes only."""
        if activity != self.activity:
            self.activity = activity
            log.info("state_changed", state=activity)  # journalctl … HUXLEY_STATE=speaking
            if self._publish is not None:
                self._publish(ActivityChanged(activity))

    def journal(self, turn: TurnRecord) -> None:
        """A turn ended: one ``turn_done`` line with its timings, then :class:`TurnEnded`."""
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
        if self._publish is not None:
            self._publish(TurnEnded(turn))
