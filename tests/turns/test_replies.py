"""Replies through its ports: the turn (RecordingTurn), the provider, the engine,
with the watchdog on a fake clock."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from huxley_sdk import SpeakVerbatim, ToolResult
from huxleyd.providers.events import (
    AudioChunk,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    ToolCall,
)
from huxleyd.skillhost.host import CANCELLED_OUTPUT, SkillHost
from huxleyd.turns.effects import TurnEffects
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.news import ActivityChanged, TurnNews
from huxleyd.turns.outputs import Activity, TurnOutputs
from huxleyd.turns.replies import Replies
from huxleyd.turns.reply_tracker import ReplyTracker
from huxleyd.turns.speech import SpeechOutput
from huxleyd.turns.state import TurnOutcome, TurnState
from huxleyd.turns.watchdog import SilenceWatchdog
from tests.fakes.turn_ports import (
    OPENAI_LIKE,
    GatedSkill,
    HeldSpeechAudio,
    RecordingProvider,
    RecordingTurn,
    RecordingVolume,
    Spawner,
)
from tests.turns import FakeSleeper, settle

TIMEOUT_S = 6.0
ERROR = b"\3\0" * 12
TOO_SHORT = b"\4\0" * 11


class Rig:
    def __init__(self, *, verbatim_reader: bool = True) -> None:
        self.time = FakeSleeper()
        self.turn = RecordingTurn()
        self.provider = RecordingProvider(
            dataclasses.replace(OPENAI_LIKE, verbatim_reader=verbatim_reader)
        )
        self.audio = HeldSpeechAudio()
        self.skill = GatedSkill("info", "slow", "brain")
        self.skill.results["info"] = ToolResult('{"time": "10:00"}')
        self.skill.results["brain"] = ToolResult("{}", SpeakVerbatim("Read me exactly."))
        self.skill.gates["slow"] = asyncio.Event()
        self.spawn = Spawner()
        self.media = MediaRunner(self.audio, on_natural_end=lambda s: None)
        self.follow_ups = 0
        self.shown: list[str] = []
        self.replies = Replies(
            turn=self.turn,
            provider=self.provider,
            outputs=TurnOutputs(
                self.audio, {"error": ERROR, "too_short": TOO_SHORT}, publish=self._shown
            ),
            speech=SpeechOutput(self.audio),
            effects=TurnEffects(
                host=SkillHost([self.skill], tool_timeout_s=60.0),
                provider=self.provider,
                audio=self.audio,
                volume=RecordingVolume(),
                media=self.media,
                spawn=self.spawn,
            ),
            tracker=ReplyTracker(self.provider, instructions="Be brief."),
            watchdog=SilenceWatchdog(TIMEOUT_S, clock=self.time.clock, sleep=self.time.sleep),
            max_silent_retries=2,
            clock=self.time.clock,
            before_follow_up=self.count_follow_up,
        )

    def _shown(self, news: TurnNews) -> None:
        if isinstance(news, ActivityChanged):
            self.shown.append(news.activity)

    def count_follow_up(self) -> None:
        self.follow_ups += 1

    async def __aenter__(self) -> Rig:
        self.replies.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.replies.cancel()
        await self.spawn.close()
        await self.replies.close()
        await self.media.close()

    async def send(self, *events: object) -> None:
        for event in events:
            self.replies.on_event(event)  # type: ignore[arg-type]
        await settle()

    def state(self) -> TurnState:
        return self.turn.state


def chunk(rid: str, item: str = "i1") -> AudioChunk:
    return AudioChunk(rid, item, bytes(4800))  # 100 ms


def done(rid: str, *calls: ToolCall, audio: bool = True) -> ResponseDone:
    return ResponseDone(rid, ResponseStatus.COMPLETED, tool_calls=calls, had_audio=audio)


async def test_an_answer_plays_and_ends_at_the_terminal_barrier() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"), chunk("r1"), chunk("r1"), done("r1"))
        assert rig.turn.moves == [
            ("state", TurnState.IN_RESPONSE),
            ("after_speech", (TurnOutcome.ANSWERED, True)),
        ]
        assert rig.audio.speech.writes == [("i1", 4800), ("i1", 4800)]
        assert not rig.replies.busy


async def test_audio_of_a_response_that_is_not_the_reply_is_dropped() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"))
        rig.replies.interrupt()
        await rig.send(chunk("r1"), chunk("r1"))
        assert rig.audio.speech.writes == []
        assert rig.replies.dropped_late_chunks == 2


async def test_first_audio_to_playing_ends_when_the_first_sample_is_heard() -> None:
    async with Rig() as rig:
        rig.replies.request()
        rig.time.clock.advance(0.4)
        await rig.send(ResponseStarted("r1"), chunk("r1"))
        turn = rig.turn.turn
        assert turn is not None and turn.first_audio_at == 0.4
        rig.time.clock.advance(0.05)
        await settle()
        assert "first_audio_to_playing_ms" not in turn.timings_ms()  # in the ring, not heard
        await rig.audio.speech.play_to(1)
        await settle()
        assert turn.timings_ms()["first_audio_to_playing_ms"] == 50.0


async def test_a_silent_request_is_retried_then_given_up() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.time.advance(TIMEOUT_S - 0.1)
        assert rig.provider.names() == ["request_response"]
        await rig.time.advance(0.1)
        assert rig.provider.names() == ["request_response", "cancel_response", "request_response"]
        assert rig.state() is TurnState.COMMITTING
        await rig.time.advance(TIMEOUT_S)
        assert rig.provider.names().count("request_response") == 3
        await rig.time.advance(TIMEOUT_S)
        assert rig.turn.ends() == [("finish_turn", TurnOutcome.SILENT)]
        assert rig.audio.earcons == [(ERROR, False)]
        await rig.time.advance(10 * TIMEOUT_S)
        assert rig.provider.names().count("request_response") == 3  # not asked again


async def test_each_chunk_moves_the_stale_deadline_and_silence_mid_reply_ends_it() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"))
        for _ in range(5):  # a chunk every 5 s: never stale
            await rig.time.advance(5.0)
            await rig.send(chunk("r1"))
        assert rig.turn.ends() == []
        await rig.time.advance(TIMEOUT_S)  # then nothing, and no response.done
        assert rig.turn.ends() == [("fail", None)]  # its one cue after what was already said
        assert rig.provider.names()[-1] == "cancel_response"
        assert rig.audio.earcons == []  # not here: the turn plays it once the speech played


async def test_the_end_of_the_reply_disarms_the_watchdog() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"), chunk("r1"), done("r1"))
        await rig.time.advance(10 * TIMEOUT_S)
        assert rig.turn.ends() == [("after_speech", (TurnOutcome.ANSWERED, True))]
        assert rig.provider.names() == ["request_response"]


async def test_an_empty_reply_is_asked_for_again() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"), done("r1", audio=False))
        assert rig.provider.names().count("request_response") == 2
        assert rig.turn.turn is not None and rig.turn.turn.retries == 1


async def test_tool_outputs_then_the_follow_up() -> None:
    async with Rig() as rig:
        rig.replies.request()
        call = ToolCall("r1", "c1", "info", "{}")
        await rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        names = rig.provider.names()
        assert names[-2:] == ["send_tool_output", "request_response"]
        assert rig.follow_ups == 1  # the skills' context refreshed first
        assert rig.state() is TurnState.AWAITING_NEXT_RESPONSE
        assert rig.turn.turn is not None and rig.turn.turn.tools == ["info"]
        await rig.time.advance(TIMEOUT_S)  # the follow-up is guarded too
        assert rig.provider.names().count("request_response") == 3


async def test_a_call_reported_only_in_response_done_still_runs() -> None:
    async with Rig() as rig:
        rig.replies.request()
        call = ToolCall("r1", "c1", "info", "{}")
        await rig.send(ResponseStarted("r1"), done("r1", call, audio=False))
        assert rig.skill.calls == ["info"]
        assert rig.provider.outputs() == {"c1": '{"time": "10:00"}'}


async def test_speak_verbatim_asks_the_reader_instead_of_a_narration() -> None:
    async with Rig() as rig:
        rig.replies.request()
        call = ToolCall("r1", "c1", "brain", "{}")
        await rig.send(ResponseStarted("r1"), call, done("r1", call, audio=False))
        assert rig.provider.names()[-2:] == ["send_tool_output", "read_aloud"]
        assert rig.follow_ups == 0


async def test_a_verbatim_answer_that_cuts_the_narration_says_what_cut_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The narration still playing when a tool's verbatim answer replaces it is
    cut; the journal (and so ``watch``) says by what, never "the button"."""
    async with Rig() as rig:
        rig.replies.request()
        call = ToolCall("r1", "c1", "brain", "{}")
        with caplog.at_level("INFO", logger="huxleyd"):
            await rig.send(ResponseStarted("r1"), chunk("r1"), call)
            rig.audio.played["i1"] = 70
            await rig.send(done("r1", call))
        assert rig.provider.names()[-1] == "read_aloud"
        [cut] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reply_cut")]
        assert 'by="a tool\'s answer read out instead"' in cut and "heard_ms=70" in cut
        assert "barge_in" not in caplog.text


async def test_barge_in_truncates_to_what_was_heard_and_answers_every_call() -> None:
    async with Rig() as rig:
        rig.replies.request()
        call = ToolCall("r1", "c1", "slow", "{}")
        await rig.send(ResponseStarted("r1"), chunk("r1"), call)
        rig.audio.played["i1"] = 70
        rig.replies.interrupt()
        assert ("truncate", ("i1", 70)) in rig.provider.commands
        assert rig.provider.outputs() == {"c1": CANCELLED_OUTPUT}
        assert ("flush", "speech") in rig.audio.log
        assert "cancel_response" in rig.provider.names()
        await rig.time.advance(10 * TIMEOUT_S)
        assert rig.turn.ends() == []  # a dropped reply does not go stale


async def test_a_call_of_a_cut_reply_is_declined_not_run() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"))
        rig.replies.interrupt()
        await rig.send(ToolCall("r1", "c1", "info", "{}"))
        assert rig.skill.calls == []
        assert rig.provider.outputs() == {"c1": CANCELLED_OUTPUT}


async def test_a_failed_response_ends_the_turn_with_the_error_cue() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(
            ResponseStarted("r1"), ResponseDone("r1", ResponseStatus.FAILED, reason="server")
        )
        assert rig.turn.ends() == [("fail", None)]  # the cue after what played
        assert rig.audio.earcons == []


async def test_an_empty_commit_is_too_short() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ProviderErrorEvent("input_audio_buffer_commit_empty", "empty", True))
        assert rig.turn.ends() == [("finish_turn", TurnOutcome.TOO_SHORT)]
        assert rig.audio.earcons == [(TOO_SHORT, False)]
        await rig.time.advance(10 * TIMEOUT_S)
        assert rig.provider.names() == ["request_response"]  # no retry after it


async def test_a_fatal_error_mid_reply_fails_the_turn() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"), ProviderErrorEvent("server_error", "down", False))
        assert rig.turn.ends() == [("fail", None)]


async def test_speaking_is_shown_with_the_first_chunk() -> None:
    async with Rig() as rig:
        rig.replies.request()
        await rig.send(ResponseStarted("r1"))
        assert rig.shown == []
        await rig.send(chunk("r1"))
        assert rig.shown == [Activity.SPEAKING]
