"""The turn coordinator against recording fakes: the order of what it does.

Time is an input (the rig's clock and sleeper move only when told), earcons
are told apart by name, and waits are for events, never for a duration.
"""

from __future__ import annotations

import dataclasses
import json

from huxleyd.providers.base import ConnectionState, InterruptAcceptance
from huxleyd.providers.events import (
    AudioChunk,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    ToolCall,
)
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnState
from tests.fakes.clock import settle
from tests.fakes.turn_ports import OPENAI_LIKE, RecordingProvider
from tests.fakes.turn_rig import (
    COMPLETION_PROMPT,
    COMPLETION_SILENCE_MS,
    FRAME,
    STREAM_CHUNK,
    Rig,
    done,
    reply,
)

PROMPTED = ("request_response", f"Be brief.\n\n{COMPLETION_PROMPT}")
"""The request a stream's natural end makes (the session's and the stream's prompt)."""
SILENCE = ("write:content", (None, 48 * COMPLETION_SILENCE_MS))
"""The completion silence on the content source (48 bytes per ms)."""


def state_of(rig: Rig) -> TurnState:
    return rig.state()


def last_turn(rig: Rig) -> TurnRecord | None:
    """Read through a call, so mypy does not keep an earlier narrowing."""
    return rig.coordinator.last_turn


def playing(rig: Rig) -> bool:
    return rig.coordinator.media.playing


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
        assert rig.audio.earcon_names() == ["listen_start", "too_short"]
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.TOO_SHORT


async def test_frames_before_the_press_are_not_sent() -> None:
    async with Rig() as rig:
        await rig.speak(10)  # nobody pressed: dropped
        assert rig.provider.appended_bytes == 0


async def test_info_tool_output_then_follow_up() -> None:
    async with Rig() as rig:
        await rig.turn()
        await rig.tools_called("info")
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
        await rig.tools_called("chime")
        rig.send(*reply("r2", "i2", chunks=1), done("r2"))
        await settle()
        requests = [i for i, (n, _) in enumerate(rig.provider.commands) if n == "request_response"]
        assert len(requests) == 2
        order = [
            str(arg) if n == "earcon" else n
            for n, arg in rig.audio.log
            if n in ("earcon", "write:speech")
        ]
        # the listen cue, then the skill's chime (a PlaySound), then the model's speech
        assert order == ["listen_start", "sound", "write:speech"]


async def test_set_volume_acts_when_the_tool_returns() -> None:
    async with Rig() as rig:
        await rig.turn()
        await rig.tools_called("louder", ends=False)
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
        await rig.tools_called("song", "book")
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
        assert rig.audio.sources["content"].writes[:3] == [(None, len(STREAM_CHUNK))] * 3
        # the completion prompt asked for a response, then silence was queued
        assert rig.provider.commands[-1] == PROMPTED
        assert rig.audio.sources["content"].writes[-1] == SILENCE[1]


async def test_barge_in_cuts_cancels_truncates_and_drops_late_audio() -> None:
    async with Rig() as rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=5))
        await settle()
        rig.audio.played["i1"] = 1234
        rig.coordinator.press()
        # silence first, then the listen cue
        assert rig.audio.log[-2:] == [("flush", "speech"), ("earcon", "listen_start")]
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
        await rig.tools_called("explode", "hang")
        # the hang times out on the host's own (real) timer: wait for the output it sends
        await rig.provider.wait_until(lambda: len(rig.provider.outputs()) == 2, "both outputs")
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
        await rig.tools_called("hang")
        rig.coordinator.press()
        assert rig.provider.outputs() == {"c1": '{"cancelled": true}'}


async def test_silent_responses_are_retried_then_given_up() -> None:
    async with Rig(timeout_s=6.0) as rig:
        await rig.turn()
        for asked in (1, 2, 3):
            assert rig.provider.names().count("request_response") == asked
            assert rig.coordinator.last_turn is None
            await rig.sleeper.advance(6.0)
        assert rig.provider.names().count("request_response") == 3  # first + 2 retries
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.SILENT
        assert rig.audio.earcon_names()[-1] == "error"
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
        await rig.tools_called("book")
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
        assert PROMPTED not in rig.provider.commands


async def test_offline_earcon_once_and_a_lost_connection_ends_the_reply() -> None:
    async with Rig() as rig:
        await rig.turn()
        assert state_of(rig) is TurnState.COMMITTING  # requested, never started
        rig.coordinator.on_connection(ConnectionState.RECONNECTING, 1)
        await settle()  # nothing arrived, so nothing to play out first
        assert state_of(rig) is TurnState.IDLE
        assert rig.coordinator.last_turn is not None
        assert rig.coordinator.last_turn.outcome is TurnOutcome.FAILED
        assert rig.audio.earcon_names().count("error") == 1  # the lost turn is heard, once
        for attempt in (4, 5, 6):
            rig.coordinator.on_connection(ConnectionState.OFFLINE, attempt)
        assert rig.audio.earcon_names().count("offline") == 1  # once, from the fourth try
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        assert not rig.coordinator.offline
        rig.coordinator.on_connection(ConnectionState.OFFLINE, 4)
        assert rig.audio.earcon_names().count("offline") == 2  # offline again: cue again


async def test_a_provider_that_refuses_us_for_good_is_heard() -> None:
    # Issue 14 items 1 and 5: a refused model or key must not leave the device mute.
    async with Rig() as rig:
        rig.coordinator.on_connection(ConnectionState.FAILED)
        assert rig.audio.earcon_names() == ["error"]


async def test_a_press_while_offline_answers_at_once_with_the_offline_cue() -> None:
    async with Rig() as rig:
        rig.coordinator.on_connection(ConnectionState.OFFLINE, 4)
        cues = rig.audio.earcon_names().count("offline")
        sent = len(rig.provider.commands)
        rig.coordinator.press()
        # at once: the cue, the offline activity (LEDs), and no turn for nobody
        assert rig.audio.earcon_names().count("offline") == cues + 1
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
        rig.coordinator.on_connection(
            ConnectionState.RECONNECTING, 1
        )  # the socket dropped; not yet "offline"
        rig.coordinator.press()
        assert rig.audio.earcon_names() == ["offline"]
        assert state_of(rig) is TurnState.IDLE


async def test_speak_verbatim_reads_out_of_band_and_asks_for_no_narration() -> None:
    async with Rig() as rig:
        await rig.turn()
        await rig.tools_called("brain")
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
        await rig.tools_called("brain")
        name, instructions = rig.provider.commands[-1]
        assert name == "request_response"
        assert isinstance(instructions, str) and instructions.endswith("Read me exactly.")


async def test_a_response_that_stalls_mid_speech_is_given_up() -> None:
    async with Rig(timeout_s=6.0) as rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=2))  # ... and then nothing, no response.done
        await rig.sleeper.advance(5.9)
        assert last_turn(rig) is None, "given up before the timeout"
        await rig.sleeper.advance(0.1)
        assert state_of(rig) is TurnState.IDLE
        last = last_turn(rig)
        assert last is not None and last.outcome is TurnOutcome.FAILED
        assert rig.provider.names()[-1] == "cancel_response"
        assert rig.audio.earcon_names()[-1] == "error"  # the error cue, after the speech
        assert rig.provider.names().count("request_response") == 1  # not asked again


# ---------------------------------------------------------------- behaviours mutation testing
# found unpinned: each test below failed with the behaviour removed (see the issue 17 report).


async def book_playing_while_idle(rig: Rig) -> None:
    """A text turn whose tool starts the book; the reply ends, the book plays on."""
    rig.coordinator.say("read me the book")
    await rig.tools_called("book")
    rig.audio.content_drained.clear()  # the book is still being heard
    rig.send(*reply("r2", "i2"), done("r2"))
    await rig.audio.wait_until(
        lambda: len(rig.audio.sources["content"].writes) == 3, "the book's three chunks"
    )
    await settle()
    assert playing(rig) and state_of(rig) is TurnState.IDLE


async def test_the_completion_silence_follows_the_completion_request() -> None:
    # Huxley: the silence is sent after the request fires, so it overlaps the
    # model's first-token latency (book → silence → voice, no dead air).
    async with Rig() as rig:
        await book_playing_while_idle(rig)
        rig.audio.content_drained.set()  # the book's last sample is heard
        await rig.wait_until(
            lambda: SILENCE in rig.timeline and PROMPTED in rig.timeline,
            "the completion request and its silence",
        )
        order = [entry for entry in rig.timeline if entry in (PROMPTED, SILENCE)]
        assert order == [PROMPTED, SILENCE], "the request first, then the silence"
        assert rig.timeline.count(SILENCE) == 1


async def test_an_idle_stop_is_not_a_natural_end_so_nothing_is_prompted() -> None:
    # A stop while idle (huxleyctl stop, the button's stop) ends the book
    # without the completion prompt: only a natural end asks the model to speak.
    async with Rig() as rig:
        await book_playing_while_idle(rig)
        asked = rig.provider.names().count("request_response")
        assert await rig.coordinator.stop_media() is True
        await settle(60)
        assert not playing(rig)
        assert rig.skill.stream_events[-1] == "book:finally"
        assert PROMPTED not in rig.provider.commands
        assert rig.provider.names().count("request_response") == asked
        assert SILENCE not in rig.timeline
        assert state_of(rig) is TurnState.IDLE and rig.coordinator.turn is None


async def test_a_calls_audio_plays_on_the_comms_source_only() -> None:
    # An InputClaim's speaker source is call audio: the mixer's "comms" source
    # (its own ducking and gain), never speech or content.
    async with Rig() as rig:
        await rig.turn()
        await rig.tools_called("call")
        rig.send(*reply("r2", "i2", chunks=1), done("r2"))  # the claim starts after this
        call_audio = [(None, len(pcm)) for pcm in rig.skill.claim_audio]

        def played_anywhere() -> int:
            return sum(w in call_audio for s in rig.audio.sources.values() for w in s.writes)

        await rig.wait_until(lambda: played_anywhere() == len(call_audio), "the call's audio")
        assert rig.audio.sources["comms"].writes == call_audio
        assert rig.audio.sources["speech"].writes == [("i2", 4800)]  # the reply only
        assert rig.audio.sources["content"].writes == []
        assert rig.coordinator.activity == "call"


async def test_a_call_id_reported_twice_in_a_turn_runs_its_tool_once() -> None:
    # Providers may report one call twice (a streamed item, then its done):
    # the tool runs once, its side effect acts once, one output goes back.
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "louder", '{"level": 70}')
        rig.send(ResponseStarted("r1"), call, call)
        await settle()
        rig.send(call, done("r1", call, audio=False))
        await rig.provider.wait_until(lambda: "c1" in rig.provider.outputs(), "the output")
        await settle()
        assert rig.skill.calls == ["louder"]
        assert rig.volume.sets == [70]
        assert rig.provider.names().count("send_tool_output") == 1
        assert rig.provider.names().count("request_response") == 2  # the turn's, one follow-up


async def test_a_press_after_a_failed_setup_gets_the_error_cue_every_time() -> None:
    """The image's setup failed: never a turn, never the offline cue's "try later"."""
    async with Rig() as rig:
        rig.coordinator.on_connection(ConnectionState.SETUP_FAILED)
        sent = len(rig.provider.commands)
        for presses in (1, 2, 3):
            rig.coordinator.press()
            rig.coordinator.release()
            assert rig.audio.earcon_names().count("error") == presses
        assert "offline" not in rig.audio.earcon_names()
        assert rig.coordinator.activity == "offline"
        assert state_of(rig) is TurnState.IDLE and rig.coordinator.turn is None
        assert len(rig.provider.commands) == sent
