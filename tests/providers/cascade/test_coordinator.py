"""The cascade under the real turn coordinator, with recording audio fakes.

The coordinator neither knows nor cares that no realtime model is behind
it: a press, mic frames and a release become a transcript, a code-prompt
tool call that a real skill answers, and a spoken follow-up; a press while
it speaks cuts the reply, and the history keeps what the speaker played.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from huxley_sdk import Skill, SkillContext, ToolDefinition, ToolResult
from huxleyd.audio.types import MicFrame
from huxleyd.clock import ManualClock
from huxleyd.providers.cascade.provider import CascadeConnection
from huxleyd.skillhost.host import SkillHost
from huxleyd.turns.coordinator import Coordinator
from huxleyd.turns.parts import TurnPersona, TurnPorts, TurnSettings, TurnTiming
from huxleyd.turns.state import TurnOutcome, TurnState
from tests.fakes.provider_callbacks import Recorder
from tests.fakes.turn_ports import RecordingAudio, RecordingVolume
from tests.providers.cascade.harness import FIRST, STORY, TIME_TURN, cascade

FRAME = bytes(960)  # 20 ms at 24 kHz


class Clock(Skill):
    """The skill the model calls."""

    name = "clock"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    @property
    def tools(self) -> list[ToolDefinition]:
        return [ToolDefinition("get_current_time", "Get the current local date and time.")]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append(args)
        return ToolResult(json.dumps({"time": "15:10"}))

    async def setup(self, ctx: SkillContext) -> None:
        pass

    async def teardown(self) -> None:
        pass


class Device:
    """A coordinator on recording fakes, driven by a cascade connection."""

    def __init__(self, conn: CascadeConnection, rec: Recorder) -> None:
        self.clock = ManualClock(100.0)
        self.audio = RecordingAudio()
        self.skill = Clock()
        self.host = SkillHost([self.skill], tool_timeout_s=5.0)
        self.coordinator = Coordinator(
            TurnPorts(provider=conn, audio=self.audio, volume=RecordingVolume(), host=self.host),
            persona=TurnPersona(instructions="Be brief."),
            settings=TurnSettings(silent_response_timeout_s=30.0),
            timing=TurnTiming(clock=self.clock),
        )
        self.seq = 0
        rec.forward = self.coordinator.on_provider_event
        conn.configure(
            instructions="Be brief.", tools=[t.to_api_format() for t in self.host.tools], voice=""
        )

    async def talk(self, frames: int = 25) -> None:
        self.coordinator.press()
        for _ in range(frames):
            self.audio.mic.put_nowait(MicFrame(FRAME, 24_000, self.clock.monotonic(), self.seq))
            self.seq += 1
            for _ in range(3):
                await asyncio.sleep(0)
            self.clock.advance(0.02)
        self.coordinator.release()

    def spoken_items(self) -> list[str | None]:
        return list(dict.fromkeys(item for item, _ in self.audio.sources["speech"].writes))


@asynccontextmanager
async def device(script: Any) -> AsyncIterator[tuple[Device, Recorder, Any, CascadeConnection]]:
    async with cascade(script) as (conn, rec, sim):
        dev = Device(conn, rec)
        await dev.coordinator.start()
        try:
            yield dev, rec, sim, conn
        finally:
            await dev.coordinator.close()


async def wait_for(predicate: Any, timeout_s: float = 60.0) -> None:
    """Poll the recording fakes, which have no change notification of their own."""
    async with asyncio.timeout(timeout_s):
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(0.005)


async def test_press_speak_release_runs_the_tool_and_speaks_the_answer() -> None:
    async with device(TIME_TURN) as (dev, rec, sim, _conn):
        await dev.talk()
        await wait_for(lambda: dev.coordinator.last_turn is not None)
        turn = dev.coordinator.last_turn
        assert turn is not None
        assert turn.outcome is TurnOutcome.ANSWERED and turn.tools == ["get_current_time"]
        assert dev.skill.calls == [{}]
        assert dev.coordinator.state is TurnState.IDLE
        # Both replies reached the speaker: the lead sentence, then the answer.
        assert len(dev.spoken_items()) == 2
        played = sum(n for _, n in dev.audio.sources["speech"].writes)
        assert played == len(rec.audio())
        # The skill's output went back to the model as the tool result.
        assert sim.chat.requests[1].messages[-1] == {
            "role": "user",
            "content": '[tool result] get_current_time() returned:\n{"time": "15:10"}',
        }
        assert (sim.chat.transcriptions[0].duration_ms, sim.violations) == (500, [])


async def test_a_press_while_it_speaks_cuts_the_reply_and_keeps_what_was_played() -> None:
    async with device(STORY) as (dev, _rec, sim, conn):
        await dev.talk()
        await sim.wait_until(
            lambda: bool(sim.tts.sessions) and sim.tts.sessions[0].batches_done == 1
        )
        await wait_for(lambda: dev.spoken_items() != [])
        (item,) = dev.spoken_items()
        assert item is not None
        first_ms = sim.tts.sessions[0].audio_bytes * 1000 // 48_000
        dev.audio.played[item] = first_ms  # the playout clock: the first sentence was heard

        dev.coordinator.press()  # barge-in

        assert dev.coordinator.state is TurnState.LISTENING
        await sim.wait_until(lambda: sim.chat.requests[0].closed_early)
        await sim.wait_until(lambda: sim.tts.sessions[0].closed_early)
        assert ("flush", "speech") in dev.audio.log
        assert conn.history.messages == [
            {"role": "user", "content": "tell me a story"},
            {"role": "assistant", "content": FIRST},
        ]
        last = dev.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.INTERRUPTED
