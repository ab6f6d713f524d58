"""The microphone's way to the provider: one frame at a time, from the loop.

Layer: turn logic over ports. :meth:`MicPath.run` (the coordinator's
``mic-pump`` task) reads every frame the engine captured and sends it to
exactly one place: the skill holding the microphone (an input claim), else
the wake-word detector while no turn listens (on the device only: nothing
goes out before a detection), else the provider, if a turn listens and the
frame came after its press (:meth:`MicPath.send`, also how the frames heard
after a wake word go out first).

While a wake-word turn listens, each frame sent is also the end-of-speech
detector's: its verdict ends the turn (``end_listening``) or drops it as
silent. A button turn's frames feed the mute gesture instead (a long silent
hold mutes). The turn is seen through :class:`ListeningTurn`
(:class:`~huxleyd.turns.inputs.TurnInputs`, which owns this path).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from huxleyd.audio.types import MicFrame
from huxleyd.clock import Clock
from huxleyd.handsfree.vad import Verdict
from huxleyd.providers.base import ProviderSession
from huxleyd.turns.mute import MuteSwitch
from huxleyd.turns.ports import AudioPort
from huxleyd.turns.state import TurnRecord, TurnSource
from huxleyd.turns.wake import WakeWord


class ListeningTurn(Protocol):
    """What the mic path reads and asks of the turn (the inputs, ``TurnInputs``)."""

    @property
    def listening(self) -> bool:
        """A turn is ``LISTENING``."""
        ...

    def listening_turn(self) -> TurnRecord | None:
        """The turn that listens and has its start (press or wake word), else None."""

    def speaker_busy(self) -> bool:
        """A reply or a stream plays (the wake word listens only if it may then)."""

    def end_listening(self) -> None:
        """The user finished: commit, or drop as too short."""

    def drop_silent_turn(self) -> None:
        """A wake-word turn in which nobody spoke: cleared, ended as too short."""


class MicPath:
    """Mic frames to the claim, the wake word or the provider."""

    def __init__(
        self,
        turn: ListeningTurn,
        *,
        audio: AudioPort,
        provider: ProviderSession,
        clock: Clock,
        mute: MuteSwitch,
        wake: WakeWord | None,
        claim_frame: Callable[[bytes], Awaitable[bool]],
    ) -> None:
        self._turn = turn
        self._audio = audio
        self._provider = provider
        self._clock = clock
        self._mute = mute
        self._wake = wake
        self._claim_frame = claim_frame
        """``Proactive.mic_frame``: True when a claim took the frame."""

    async def run(self) -> None:
        """Forward mic frames to the provider while listening; drop them otherwise."""
        while True:
            frame = await self._audio.read_mic()
            if await self._claim_frame(frame.pcm):
                continue  # a skill holds the microphone; the provider hears nothing
            if self._wake is not None and not self._turn.listening:
                busy = self._turn.speaker_busy()
                self._wake.hears(frame, listening=False, speaker_busy=busy)
                continue  # on the device only: nothing goes out before a detection
            self.send(frame)

    def send(self, frame: MicFrame) -> None:
        """A frame to the provider, if a turn listens and it came after the start."""
        turn = self._turn.listening_turn()
        if turn is None or turn.pressed_at is None:
            return
        if frame.captured_at + frame.duration_ms / 1000.0 <= turn.pressed_at:
            return  # entirely before the press (or the wake word)
        self._provider.append_audio(frame.pcm)
        turn.audio_sent_ms += frame.duration_ms
        if turn.first_frame_sent_at is None:
            turn.first_frame_sent_at = self._clock.monotonic()
        if turn.source is not TurnSource.WAKE:
            self._mute.heard(frame.pcm, frame.duration_ms)
        elif self._wake is not None:
            verdict = self._wake.frame_sent(frame)
            if verdict is Verdict.ENDED:
                self._turn.end_listening()
            elif verdict is Verdict.NOTHING_SAID:
                self._turn.drop_silent_turn()
