"""The turn coordinator against recording fakes: the order of what it does."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    ContentType,
    PlaySound,
    SetVolume,
    Skill,
    SkillContext,
    SpeakVerbatim,
    ToolDefinition,
    ToolResult,
)
from huxleyd.audio.types import MicFrame
from huxleyd.clock import ManualClock
from huxleyd.providers.base import ConnectionState, InterruptAcceptance
from huxleyd.providers.events import (
    AudioChunk,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    ToolCall,
)
from huxleyd.skillhost import SkillHost
from huxleyd.turns.coordinator import Coordinator, TurnSettings
from huxleyd.turns.state import TurnOutcome, TurnState
from tests.fakes.turn_ports import OPENAI_LIKE, RecordingAudio, RecordingProvider, RecordingVolume
from tests.turns import eventually

FRAME = bytes(960)  # 20 ms at 24 kHz


class Toolbox(Skill):
    """A skill with one tool per behaviour under test."""

    name = "toolbox"

    def __init__(self) -> None:
        self.stream_events: list[str] = []
        self.release_hang = asyncio.Event()

    @property
    def tools(self) -> list[ToolDefinition]:
        return [
            ToolDefinition(n, n)
            for n in ("info", "chime", "louder", "stop", "book", "song", "explode", "hang", "brain")
        ]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        if tool_name == "info":
            return ToolResult(json.dumps({"time": "10:00"}))
        if tool_name == "chime":
            return ToolResult("{}", PlaySound(b"\1\0" * 100))
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
                    on_complete_prompt="Say it ended.",
                    completion_silence_ms=200,
                    content_type=ContentType.NONMIXABLE,
                    label=tool_name,
                ),
            )
        if tool_name == "brain":
            return ToolResult('{"delivered": true}', SpeakVerbatim("Read me exactly."))
        if tool_name == "hang":
            await self.release_hang.wait()
            return ToolResult("{}")
        raise RuntimeError("boom")

    def _factory(self, label: str) -> Any:
        events = self.stream_events

        async def stream() -> AsyncIterator[bytes]:
            events.append(f"{label}:start")
            try:
                for _ in range(3):
                    yield bytes(480)
                events.append(f"{label}:end")
            finally:
                events.append(f"{label}:finally")

        return stream

    async def setup(self, ctx: SkillContext) -> None:
        pass

    async def teardown(self) -> None:
        pass


class Rig:
    def __init__(
        self,
        *,
        timeout_s: float = 30.0,
        tool_timeout_s: float = 5.0,
        provider: RecordingProvider | None = None,
    ) -> None:
        self.clock = ManualClock(100.0)
        self.provider = provider or RecordingProvider()
        self.audio = RecordingAudio()
        self.volume = RecordingVolume()
        self.skill = Toolbox()
        self.coordinator = Coordinator(
            provider=self.provider,
            audio=self.audio,
            volume=self.volume,
            host=SkillHost([self.skill], tool_timeout_s=tool_timeout_s),
            earcons={
                "listen_start": b"\0\0" * 10,
                "too_short": b"\0\0" * 11,
                "error": b"\0\0" * 12,
            },
            instructions="Be brief.",
            settings=TurnSettings(silent_response_timeout_s=timeout_s, max_silent_retries=2),
            clock=self.clock,
        )
        self.seq = 0

    async def __aenter__(self) -> Rig:
        await self.coordinator.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.coordinator.close()

    async def speak(self, frames: int) -> None:
        for _ in range(frames):
            self.audio.mic.put_nowait(MicFrame(FRAME, 24_000, self.clock.monotonic(), self.seq))
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


def state_of(rig: Rig) -> TurnState:
    """Read the state through a call, so mypy does not narrow it between steps."""
    return rig.coordinator.state


def playing(rig: Rig) -> bool:
    return rig.coordinator.media.playing


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def reply(rid: str, item: str, chunks: int = 3) -> list[Any]:
    return [ResponseStarted(rid), *[AudioChunk(rid, item, bytes(4800)) for _ in range(chunks)]]


def done(rid: str, *calls: ToolCall, audio: bool = True) -> ResponseDone:
    return ResponseDone(rid, ResponseStatus.COMPLETED, tool_calls=calls, had_audio=audio)


async def test_a_ptt_turn_commits_and_plays_the_answer() -> None:
    async with Rig() as rig:
        await rig.turn(frames=20)
        assert rig.provider.names() == [
            "start_turn",
            "append_audio",
            "end_turn",
            "request_response",
        ]
        assert rig.provider.appended_bytes == 20 * len(FRAME)
        assert state_of(rig) is TurnState.COMMITTING
        rig.send(*reply("r1", "i1"), done("r1"))
        await settle()
        assert rig.audio.sources["speech"].writes == [("i1", 4800)] * 3
        assert state_of(rig) is TurnState.IDLE
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.ANSWERED
        assert last.timings_ms()["release_to_commit_ms"] == 0.0
        assert last.timings_ms()["press_to_first_frame_ms"] == 0.0


async def test_a_too_short_press_is_not_committed() -> None:
    async with Rig() as rig:
        await rig.turn(frames=5)  # 100 ms < 150 ms
        assert rig.provider.names() == ["start_turn", "append_audio", "start_turn"]
        assert ("earcon", 22) in rig.audio.log  # the too_short earcon
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.TOO_SHORT


async def test_frames_before_the_press_are_not_sent() -> None:
    async with Rig() as rig:
        await rig.speak(10)  # nobody pressed: dropped
        assert rig.provider.appended_bytes == 0


async def test_info_tool_output_then_follow_up() -> None:
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "info", "{}")
        rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        await settle()
        names = rig.provider.names()
        assert names[-2:] == ["send_tool_output", "request_response"]
        assert rig.provider.outputs() == {"c1": '{"time": "10:00"}'}
        assert state_of(rig) is TurnState.AWAITING_NEXT_RESPONSE
        rig.send(*reply("r2", "i2"), done("r2"))
        await settle()
        assert state_of(rig) is TurnState.IDLE
        assert rig.coordinator.last_turn is not None and rig.coordinator.last_turn.tools == ["info"]


async def test_play_sound_is_queued_after_the_request_and_before_speech() -> None:
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "chime", "{}")
        rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        await settle()
        rig.send(*reply("r2", "i2", chunks=1), done("r2"))
        await settle()
        requests = [i for i, (n, _) in enumerate(rig.provider.commands) if n == "request_response"]
        assert len(requests) == 2
        order = [n for n, _ in rig.audio.log if n in ("earcon", "write:speech")]
        # listen_start earcon, then the chime, then the model's speech
        assert order == ["earcon", "earcon", "write:speech"]
        assert ("earcon", 200) in rig.audio.log


async def test_set_volume_acts_when_the_tool_returns() -> None:
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "louder", "{}")
        rig.send(ResponseStarted("r1"), call)
        await settle()
        assert rig.volume.sets == [70]  # before response.done, before the follow-up


async def test_set_volume_rounds_and_clamps_what_the_skill_gave() -> None:
    async with Rig() as rig:
        await rig.turn()
        levels = ['{"level": 42.6}', '{"level": 140}', '{"level": -5}']
        calls = [ToolCall("r1", f"c{i}", "louder", args) for i, args in enumerate(levels)]
        rig.send(ResponseStarted("r1"), *calls)
        await settle()
        assert sorted(rig.volume.sets) == [0, 43, 100]


async def test_audio_stream_starts_after_speech_and_prompts_after_natural_end() -> None:
    async with Rig() as rig:
        await rig.turn()
        c1, c2 = ToolCall("r1", "c1", "song", "{}"), ToolCall("r1", "c2", "book", "{}")
        rig.send(ResponseStarted("r1"), c1, c2, done("r1", c1, c2, audio=False))
        await settle()
        assert rig.skill.stream_events == []  # latched, not started
        rig.audio.speech_drained.clear()  # the intro is still playing
        rig.send(*reply("r2", "i2"), done("r2"))
        await settle()
        assert state_of(rig) is TurnState.APPLYING_SIDE_EFFECTS
        assert rig.skill.stream_events == []
        rig.audio.speech_drained.set()
        await settle(60)
        # only the last stream of the turn ran, to its natural end
        assert rig.skill.stream_events == ["book:start", "book:end", "book:finally"]
        assert rig.audio.sources["content"].writes[:3] == [(None, 480)] * 3
        # the completion prompt asked for a response, then silence was queued
        assert rig.provider.commands[-1] == ("request_response", "Be brief.\n\nSay it ended.")
        assert rig.audio.sources["content"].writes[-1] == (None, 48 * 200)


async def test_barge_in_cuts_cancels_truncates_and_drops_late_audio() -> None:
    async with Rig() as rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=5))
        await settle()
        rig.audio.played["i1"] = 1234
        rig.coordinator.press()
        tail = rig.audio.names()[-2:]
        assert tail == ["flush", "earcon"], rig.audio.log  # silence first, then the listen cue
        names = rig.provider.names()
        assert names[-3:] == ["cancel_response", "truncate", "start_turn"]
        assert rig.provider.commands[-2] == ("truncate", ("i1", 1234))
        writes = len(rig.audio.sources["speech"].writes)
        rig.send(AudioChunk("r1", "i1", bytes(4800)), ResponseDone("r1", ResponseStatus.CANCELLED))
        await settle()
        assert len(rig.audio.sources["speech"].writes) == writes  # late deltas never play
        assert rig.coordinator.dropped_late_chunks == 1
        assert state_of(rig) is TurnState.LISTENING


async def test_a_local_cut_provider_gets_the_heard_length_too() -> None:
    # Issue 14 item 7: without truncate (xAI, Gemini) the core still needs what was
    # heard, to tell the model before the next turn.
    local_cut = dataclasses.replace(
        OPENAI_LIKE,
        response_cancel=False,
        truncate=False,
        interrupt_acceptance=InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION,
    )
    async with Rig(provider=RecordingProvider(local_cut)) as rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=5))
        await settle()
        rig.audio.played["i1"] = 700
        rig.coordinator.press()
        assert ("truncate", ("i1", 700)) in rig.provider.commands


async def test_failing_and_hanging_tools_answer_and_the_session_goes_on() -> None:
    async with Rig(tool_timeout_s=0.05) as rig:
        await rig.turn()
        c1, c2 = ToolCall("r1", "c1", "explode", "{}"), ToolCall("r1", "c2", "hang", "{}")
        rig.send(ResponseStarted("r1"), c1, c2, done("r1", c1, c2, audio=False))
        await eventually(lambda: len(rig.provider.outputs()) == 2, "both outputs")
        await settle()
        outputs = rig.provider.outputs()
        assert json.loads(outputs["c1"])["error"] == "tool_failed"
        assert json.loads(outputs["c2"])["error"] == "timeout"
        assert state_of(rig) is TurnState.AWAITING_NEXT_RESPONSE
        rig.send(*reply("r2", "i2"), done("r2"))
        await settle()
        assert state_of(rig) is TurnState.IDLE


async def test_an_interrupted_tool_gets_a_cancelled_output() -> None:
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "hang", "{}")
        rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        await settle()
        rig.coordinator.press()
        assert rig.provider.outputs() == {"c1": '{"cancelled": true}'}


async def test_silent_responses_are_retried_then_given_up() -> None:
    async with Rig(timeout_s=0.02) as rig:
        await rig.turn()
        await eventually(lambda: rig.coordinator.last_turn is not None, "the turn to end")
        assert rig.provider.names().count("request_response") == 3  # first + 2 retries
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.SILENT
        assert ("earcon", 24) in rig.audio.log  # the error earcon
        assert state_of(rig) is TurnState.IDLE


async def test_an_empty_response_is_retried() -> None:
    async with Rig() as rig:
        await rig.turn()
        rig.send(ResponseStarted("r1"), done("r1", audio=False))
        await settle()
        assert rig.provider.names().count("request_response") == 2
        rig.send(*reply("r2", "i2"), done("r2"))
        await settle()
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.retries == 1
        assert rig.coordinator.last_turn.outcome is TurnOutcome.ANSWERED


async def test_commit_empty_error_is_a_too_short_turn() -> None:
    async with Rig() as rig:
        await rig.turn()
        rig.send(
            ProviderErrorEvent("input_audio_buffer_commit_empty", "too small", recoverable=True)
        )
        assert state_of(rig) is TurnState.IDLE
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.TOO_SHORT


async def test_text_turn_and_cancel_media() -> None:
    async with Rig() as rig:
        turn_id = rig.coordinator.say("what time is it")
        assert turn_id.startswith("t")
        assert rig.provider.names() == ["send_user_text", "request_response"]
        call = ToolCall("r1", "c1", "book", "{}")
        rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        await settle()
        rig.audio.content_drained.clear()  # the book keeps playing
        rig.send(*reply("r2", "i2"), done("r2"))
        await settle(60)
        assert playing(rig)
        rig.coordinator.say("stop the book")
        stop = ToolCall("r3", "c3", "stop", "{}")
        rig.send(ResponseStarted("r3"), stop)
        await settle(60)
        assert not playing(rig)
        assert rig.skill.stream_events[-1] == "book:finally"
        # stopped, not finished: no completion prompt
        assert ("request_response", "Be brief.\n\nSay it ended.") not in rig.provider.commands


async def test_offline_earcon_once_and_a_lost_connection_ends_the_reply() -> None:
    async with Rig() as rig:
        rig.coordinator._earcons["offline"] = b"\0\0" * 13
        await rig.turn()
        assert state_of(rig) is TurnState.COMMITTING  # requested, never started
        rig.coordinator.on_connection(ConnectionState.RECONNECTING, 1)
        assert state_of(rig) is TurnState.IDLE
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.FAILED
        for attempt in (4, 5, 6):
            rig.coordinator.on_connection(ConnectionState.OFFLINE, attempt)
        assert rig.audio.log.count(("earcon", 26)) == 1  # once, from the fourth try
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        assert not rig.coordinator.offline
        rig.coordinator.on_connection(ConnectionState.OFFLINE, 4)
        assert rig.audio.log.count(("earcon", 26)) == 2  # offline again: cue again


async def test_a_provider_that_refuses_us_for_good_is_heard() -> None:
    # Issue 14 items 1 and 5: a refused model or key must not leave the device mute.
    async with Rig() as rig:
        rig.coordinator.on_connection(ConnectionState.FAILED)
        assert rig.audio.log.count(("earcon", 24)) == 1  # the "error" earcon (12 samples)


async def test_a_press_while_offline_answers_at_once_with_the_offline_cue() -> None:
    async with Rig() as rig:
        rig.coordinator._earcons["offline"] = b"\0\0" * 13
        rig.coordinator.on_connection(ConnectionState.OFFLINE, 4)
        cues = rig.audio.log.count(("earcon", 26))
        sent = len(rig.provider.commands)
        rig.coordinator.press()
        # at once: the cue, the offline activity (LEDs), and no turn for nobody
        assert rig.audio.log.count(("earcon", 26)) == cues + 1
        assert rig.coordinator.activity == "offline"
        assert state_of(rig) is TurnState.IDLE and rig.coordinator.turn is None
        assert len(rig.provider.commands) == sent, "nothing was sent to a dead connection"
        rig.coordinator.release()
        assert state_of(rig) is TurnState.IDLE
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        assert rig.coordinator.activity == "idle"
        rig.coordinator.press()
        assert state_of(rig) is TurnState.LISTENING


async def test_a_press_while_reconnecting_gets_the_offline_cue_too() -> None:
    async with Rig() as rig:
        rig.coordinator._earcons["offline"] = b"\0\0" * 13
        rig.coordinator.on_connection(
            ConnectionState.RECONNECTING, 1
        )  # the socket dropped; not yet "offline"
        rig.coordinator.press()
        assert rig.audio.log.count(("earcon", 26)) == 1
        assert state_of(rig) is TurnState.IDLE


async def test_speak_verbatim_reads_out_of_band_and_asks_for_no_narration() -> None:
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "brain", "{}")
        rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        await settle()
        assert rig.provider.names()[-2:] == ["send_tool_output", "read_aloud"]
        assert rig.provider.commands[-1] == ("read_aloud", "Read me exactly.")
        assert ("flush", "speech") in rig.audio.log  # stale speech cleared first
        rig.send(
            ResponseStarted("r2", out_of_band=True),
            AudioChunk("r2", "i2", bytes(4800)),
            ResponseDone("r2", ResponseStatus.COMPLETED, had_audio=True, out_of_band=True),
        )
        await settle()
        assert rig.audio.sources["speech"].writes == [("i2", 4800)]
        assert state_of(rig) is TurnState.IDLE
        assert rig.provider.names().count("request_response") == 1  # no narration follow-up


async def test_speak_verbatim_without_a_reader_asks_in_band() -> None:
    caps = dataclasses.replace(OPENAI_LIKE, verbatim_reader=False)
    async with Rig() as rig:
        rig.provider._caps = caps
        await rig.turn()
        call = ToolCall("r1", "c1", "brain", "{}")
        rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        await settle()
        name, instructions = rig.provider.commands[-1]
        assert name == "request_response"
        assert isinstance(instructions, str) and instructions.endswith("Read me exactly.")


async def test_a_response_that_stalls_mid_speech_is_given_up() -> None:
    async with Rig(timeout_s=0.05) as rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=2))  # ... and then nothing, no response.done
        await eventually(lambda: rig.coordinator.last_turn is not None, "the turn to end")
        await settle()
        assert state_of(rig) is TurnState.IDLE
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.FAILED
        assert rig.provider.names()[-1] == "cancel_response"
        assert ("earcon", 24) in rig.audio.log  # the error cue, after the speech
        assert rig.provider.names().count("request_response") == 1  # not asked again
