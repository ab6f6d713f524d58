"""The wake word, seen from the turn layer: when the detector may hear, and
how a wake turn ends.

The turn's inputs (:class:`~huxleyd.turns.inputs.TurnInputs`) ask
:class:`WakeWord` three things:

- :meth:`WakeWord.hears`: may this mic frame go to the detector? Only while
  the wake word is armed (configured, the detector loaded, the persona lets
  it, not muted) and no turn is listening; while the speaker plays only when
  ``during_playback`` allows it (an echo canceller, or a mic that cancels
  echo itself), else the device's own voice would wake it.
- :meth:`WakeWord.detected`: the detection's audio time, and the frames
  captured after it that the detector heard before the detection arrived
  (``PREROLL_MS``): they belong to the user's question, not the wake word.
- :meth:`WakeWord.frame_sent`: the end-of-speech verdict of a wake turn's
  frame (nobody releases a button).

The detector itself is a :class:`WakePort` (``handsfree.listener`` runs it
on its own thread); nothing here sends audio anywhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from huxleyd.audio.types import MicFrame
from huxleyd.handsfree.settings import WakeSettings
from huxleyd.handsfree.vad import NOISE_START_DBFS, EndOfSpeech, Verdict

PREROLL_MS = 600.0
"""How much of the recent mic the coordinator keeps to replay after a detection."""


class WakePort(Protocol):
    """The detector as the coordinator feeds it (``handsfree.listener.WakeListener``)."""

    def hear(self, pcm: bytes, captured_at: float, end_at: float) -> None:
        """Queue one frame captured from ``captured_at`` to ``end_at``; never blocks."""
        ...

    def reset(self) -> None:
        """Forget what was heard: the next detection starts from fresh audio."""
        ...

    def deliver_to(self, on_wake: Callable[[float], None]) -> None:
        """Hand each detection (``heard_at``) to ``on_wake``, on the loop."""
        ...


class WakeWord:
    """Whether the wake word listens now, and the end of speech in a wake turn."""

    def __init__(
        self,
        port: WakePort,
        settings: WakeSettings,
        *,
        playback_ok: bool,
        persona_allows: bool = True,
    ) -> None:
        self._port = port
        self.settings = settings
        self.playback_ok = playback_ok
        """Listen while the speaker plays (``during_playback``, resolved at build)."""
        self.persona_allows = persona_allows
        self.muted = False
        self._recent: deque[MicFrame] = deque()
        self._vad: EndOfSpeech | None = None
        self._noise = NOISE_START_DBFS

    def deliver_to(self, on_wake: Callable[[float], None]) -> None:
        """Hand each detection to ``on_wake`` (the coordinator's ``wake``)."""
        self._port.deliver_to(on_wake)

    @property
    def armed(self) -> bool:
        return self.persona_allows and not self.muted

    def hears(self, frame: MicFrame, *, listening: bool, speaker_busy: bool) -> bool:
        """Hand ``frame`` to the detector if it may hear it now; True when it did."""
        if not self.armed or listening or (speaker_busy and not self.playback_ok):
            return False
        end_at = frame.captured_at + frame.duration_ms / 1000.0
        self._recent.append(frame)
        while self._recent and self._recent[0].captured_at < end_at - PREROLL_MS / 1000.0:
            self._recent.popleft()
        self._port.hear(frame.pcm, frame.captured_at, end_at)
        return True

    def detected(self, heard_at: float) -> list[MicFrame]:
        """A wake turn starts: the recent frames captured after ``heard_at``, oldest first."""
        after = [f for f in self._recent if f.captured_at >= heard_at]
        self._recent.clear()
        self._vad = EndOfSpeech(self.settings, noise_dbfs=self._noise)
        return after

    def frame_sent(self, frame: MicFrame) -> Verdict:
        """A wake turn's frame reached the provider: has the user finished?"""
        if self._vad is None:
            return Verdict.GOING_ON
        verdict = self._vad.frame(frame.pcm, frame.duration_ms)
        if verdict is not Verdict.GOING_ON:
            self._noise = self._vad.noise_dbfs
            self._vad = None
        return verdict

    def turn_over(self) -> None:
        """The wake turn ended another way (the button took it, barge-in, close)."""
        self._vad = None
        self._recent.clear()
        self._port.reset()
