"""The coordinator on recording fakes: a rig for the turn layer's tests.

A real :class:`~huxleyd.turns.coordinator.Coordinator` and a real
:class:`~huxleyd.skillhost.host.SkillHost` with one test skill (:class:`Toolbox`),
on the recording ports of :mod:`tests.fakes.turn_ports`. Time is an input:
the turn clock is a :class:`~huxleyd.clock.ManualClock` and every timer of
the turn layer (silent replies, stale replies, patience, inject deadlines)
sleeps on :attr:`Rig.sleeper`, which moves only when a test advances it.
Earcons are told apart by name (:data:`EARCONS`, recorded by
:class:`~tests.fakes.turn_ports.RecordingAudio`); the provider's commands
and the audio actions also land on one :attr:`Rig.timeline`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    ContentType,
    InputClaim,
    PlaySound,
    SetVolume,
    Skill,
    SkillContext,
    SpeakVerbatim,
    ToolDefinition,
    ToolResult,
)
from huxleyd.audio.types import MicFrame
from huxleyd.degraded import Degraded
from huxleyd.providers.events import (
    AudioChunk,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    ToolCall,
)
from huxleyd.skillhost.host import SkillHost
from huxleyd.turns.coordinator import Coordinator
from huxleyd.turns.parts import MicSetup, TurnPersona, TurnPorts, TurnSettings, TurnTiming
from huxleyd.turns.state import TurnState
from huxleyd.turns.wake import WakeWord
from tests.fakes.clock import FakeSleeper, settle
from tests.fakes.turn_ports import (
    Record,
    RecordingAudio,
    RecordingProvider,
    RecordingVolume,
    wait_on,
)

FRAME = bytes(960)  # 20 ms at 24 kHz

EARCONS = {
    name: bytes([i + 1, 0]) * 10
    for i, name in enumerate(
        ("listen_start", "too_short", "error", "offline", "key_refused", "timer", "listen_stop")
    )
}
"""The persona's earcons: same length, different content (told apart by name)."""

CHIME = b"\1\0" * 100
"""The ``chime`` tool's PlaySound (no earcon of the registry)."""

STREAM_CHUNK = bytes(480)
"""Each chunk the ``book`` and ``song`` streams yield (three per stream)."""

COMPLETION_SILENCE_MS = 200
COMPLETION_PROMPT = "Say it ended."


class Toolbox(Skill):
    """A skill with one tool per behaviour under test."""

    name = "toolbox"

    def __init__(self) -> None:
        self.stream_events: list[str] = []
        self.release_hang = asyncio.Event()
        self.calls: list[str] = []
        """Every tool handled, in order (a duplicate call would show twice)."""
        self.claim_audio: list[bytes] = [b"\1\0" * 240, b"\2\0" * 240]
        """What the ``call`` tool's claim plays on its speaker source."""
        self.claim_frames: list[bytes] = []

    @property
    def tools(self) -> list[ToolDefinition]:
        names = ("info", "chime", "louder", "stop", "book", "song", "explode", "hang", "brain")
        return [ToolDefinition(n, n) for n in (*names, "call")]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append(tool_name)
        if tool_name == "info":
            return ToolResult(json.dumps({"time": "10:00"}))
        if tool_name == "chime":
            return ToolResult("{}", PlaySound(CHIME))
        if tool_name == "louder":
            # As given by the model: Huxley's SetVolume carries it unchecked.
            return ToolResult("{}", SetVolume(args.get("level", 70)))
        if tool_name == "stop":
            return ToolResult("{}", CancelMedia())
        if tool_name in ("book", "song"):
            return ToolResult(
                "{}",
                AudioStream(
                    factory=self._factory(tool_name),
                    on_complete_prompt=COMPLETION_PROMPT,
                    completion_silence_ms=COMPLETION_SILENCE_MS,
                    content_type=ContentType.NONMIXABLE,
                    label=tool_name,
                ),
            )
        if tool_name == "brain":
            return ToolResult('{"delivered": true}', SpeakVerbatim("Read me exactly."))
        if tool_name == "call":
            return ToolResult("{}", self.claim())
        if tool_name == "hang":
            await self.release_hang.wait()
            return ToolResult("{}")
        raise RuntimeError("boom")

    def claim(self) -> InputClaim:
        async def on_mic_frame(pcm: bytes) -> None:
            self.claim_frames.append(pcm)

        async def speaker() -> AsyncIterator[bytes]:
            for pcm in self.claim_audio:
                yield pcm

        return InputClaim(on_mic_frame=on_mic_frame, speaker_source=speaker(), title="call")

    def _factory(self, label: str) -> Any:
        events = self.stream_events

        async def stream() -> AsyncIterator[bytes]:
            events.append(f"{label}:start")
            try:
                for _ in range(3):
                    yield STREAM_CHUNK
                events.append(f"{label}:end")
            finally:
                events.append(f"{label}:finally")

        return stream

    async def setup(self, ctx: SkillContext) -> None:
        pass

    async def teardown(self) -> None:
        pass


class Rig:
    """``async with Rig() as rig``: a started coordinator, closed at the end."""

    def __init__(
        self,
        *,
        timeout_s: float = 30.0,
        tool_timeout_s: float = 5.0,
        provider: RecordingProvider | None = None,
        degraded: Degraded | None = None,
        wake: WakeWord | None = None,
        muted: bool = False,
    ) -> None:
        self.sleeper = FakeSleeper()
        self.clock = self.sleeper.clock
        self.clock.advance(100.0)
        self.timeline = Record(None)
        """Provider commands and audio actions, in the order they happened."""
        self.provider = provider or RecordingProvider()
        self.provider.share_timeline(self.timeline)
        self.audio = RecordingAudio(earcons=EARCONS, timeline=self.timeline)
        self.volume = RecordingVolume()
        self.skill = Toolbox()
        self.coordinator = Coordinator(
            TurnPorts(
                provider=self.provider,
                audio=self.audio,
                volume=self.volume,
                host=SkillHost([self.skill], tool_timeout_s=tool_timeout_s),
                degraded=degraded,
            ),
            persona=TurnPersona(instructions="Be brief.", earcons=EARCONS),
            settings=TurnSettings(silent_response_timeout_s=timeout_s, max_silent_retries=2),
            timing=TurnTiming(clock=self.clock, sleep=self.sleeper.sleep),
            mic=MicSetup(wake=wake, muted=muted),
        )
        self.seq = 0

    async def __aenter__(self) -> Rig:
        await self.coordinator.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.coordinator.close()

    async def speak(self, frames: int, pcm: bytes = FRAME) -> None:
        for _ in range(frames):
            self.audio.mic.put_nowait(MicFrame(pcm, 24_000, self.clock.monotonic(), self.seq))
            self.seq += 1
            await settle(3)
            self.clock.advance(0.02)

    async def turn(self, frames: int = 20) -> None:
        self.coordinator.press()
        await self.speak(frames)
        self.coordinator.release()
        await settle()

    def send(self, *events: Any) -> None:
        for event in events:
            self.coordinator.on_provider_event(event)

    async def tools_called(
        self, *names: str, rid: str = "r1", ends: bool = True
    ) -> tuple[ToolCall, ...]:
        """The model's response ``rid`` calls the toolbox's ``names`` (ids c1, c2…)
        and, if ``ends``, ends without audio; returns the calls."""
        calls = tuple(ToolCall(rid, f"c{i}", name, "{}") for i, name in enumerate(names, 1))
        self.send(ResponseStarted(rid), *calls, *([done(rid, *calls, audio=False)] if ends else []))
        await settle()
        return calls

    async def wait_until(
        self, check: Callable[[], bool], what: str, *, safety_s: float = 30.0
    ) -> None:
        """Return once ``check()`` holds, re-checked at each provider command and
        audio action (``safety_s`` only turns a hang into a failure)."""
        await wait_on(self.timeline, check, what, safety_s)

    def state(self) -> TurnState:
        """Read the state through a call, so mypy does not narrow it between steps."""
        return self.coordinator.state


def reply(rid: str, item: str, chunks: int = 3) -> list[Any]:
    """A response that starts and speaks ``chunks`` chunks of 100 ms (no done)."""
    return [ResponseStarted(rid), *[AudioChunk(rid, item, bytes(4800)) for _ in range(chunks)]]


def done(rid: str, *calls: ToolCall, audio: bool = True) -> ResponseDone:
    return ResponseDone(rid, ResponseStatus.COMPLETED, tool_calls=calls, had_audio=audio)
