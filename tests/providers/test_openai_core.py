"""The sans-I/O OpenAI core: feed it JSON, read what it sends and reports."""

from __future__ import annotations

import base64
import json
import logging
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.providers.base import InterruptAcceptance, RealtimeCore
from huxleyd.providers.events import (
    AudioChunk,
    Event,
    InputCommitted,
    ItemTruncated,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    Role,
    SessionReady,
    ToolCall,
    TranscriptDone,
)
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.sim import wire
from tests.providers import frames
from tests.providers.frames import TOOLS, ready_core, sent

EVENT_TYPES = typing.get_args(Event)


def test_it_satisfies_the_provider_protocol() -> None:
    core = OpenAIRealtimeCore()
    assert isinstance(core, RealtimeCore)
    assert core.capabilities.interrupt_acceptance is InterruptAcceptance.IMMEDIATE_PROVIDER_ACK
    assert core.capabilities.input_rate_hz == core.capabilities.output_rate_hz == 24_000


def test_first_configuration_is_a_full_ga_push_to_talk_session() -> None:
    core = OpenAIRealtimeCore(transcription_model="gpt-4o-mini-transcribe")
    core.configure(instructions="Be brief.", tools=TOOLS, voice="cedar")
    core.connection_opened()
    [update] = sent(core)
    session = update["session"]
    assert update["type"] == "session.update"
    assert session["type"] == "realtime"
    assert session["output_modalities"] == ["audio"]
    assert session["instructions"] == "Be brief."
    audio_in, audio_out = session["audio"]["input"], session["audio"]["output"]
    assert audio_in["format"] == {"type": "audio/pcm", "rate": 24000}
    assert audio_in["turn_detection"] is None  # push-to-talk: we commit ourselves
    assert audio_in["transcription"] == {"model": "gpt-4o-mini-transcribe"}
    assert audio_out == {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "cedar"}
    assert [t["name"] for t in session["tools"]] == ["get_current_time", "set_volume"]
    assert all(t["type"] == "function" for t in session["tools"])
    assert session["tools"][1]["parameters"]["required"] == ["level"]


def test_session_ready_once_after_our_update_is_applied() -> None:
    core = OpenAIRealtimeCore()
    core.configure(instructions="x", tools=[], voice="marin")
    core.connection_opened()
    core.receive(frames.session_created())
    assert core.events_received() == []  # created is the default session, not ours yet
    core.receive(frames.session_updated())
    core.receive(frames.session_updated())
    [ready] = core.events_received()
    assert isinstance(ready, SessionReady) and (ready.session_id or "").startswith("sess_")


def test_without_configuration_the_created_session_is_ready() -> None:
    core = OpenAIRealtimeCore()
    core.connection_opened()
    core.receive(frames.session_created())
    [ready] = core.events_received()
    assert isinstance(ready, SessionReady) and (ready.session_id or "").startswith("sess_")
    assert core.messages_to_send() == []


def test_only_changed_configuration_is_resent() -> None:
    core = ready_core()
    core.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
    assert core.messages_to_send() == []
    core.configure(instructions="Be very brief.", tools=TOOLS, voice="marin")
    [update] = sent(core)
    assert update["session"] == {"type": "realtime", "instructions": "Be very brief."}
    core.configure(instructions="Be very brief.", tools=TOOLS[:1], voice="marin")
    [update] = sent(core)
    assert update["session"] == {"type": "realtime", "tools": [wire_tool(TOOLS[0])]}
    core.configure(instructions="Be very brief.", tools=TOOLS[:1], voice="verse")
    [update] = sent(core)
    assert update["session"] == {"type": "realtime", "audio": {"output": {"voice": "verse"}}}


def wire_tool(tool: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", **tool}


def test_a_new_connection_resends_everything() -> None:
    core = ready_core()
    core.connection_opened()
    [update] = sent(core)
    assert update["session"]["instructions"] == "Be brief."
    assert len(update["session"]["tools"]) == 2


def test_bad_tool_declarations_are_refused() -> None:
    core = OpenAIRealtimeCore()
    with pytest.raises(ValueError, match="non-empty 'name'"):
        core.configure(instructions="", tools=[{"description": "x"}], voice="marin")
    with pytest.raises(ValueError, match="duplicate tool names: a"):
        core.configure(instructions="", tools=[{"name": "a"}, {"name": "a"}], voice="marin")


def test_turn_commands_produce_valid_ga_frames() -> None:
    core = ready_core()
    pcm = bytes(range(256)) * 4
    core.start_turn()
    core.append_audio(pcm)
    core.end_turn()
    core.request_response()
    out = sent(core)
    assert [e["type"] for e in out] == [
        "input_audio_buffer.clear",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "response.create",
    ]
    assert base64.b64decode(out[1]["audio"]) == pcm
    # A plain response (the session's settings), marked as ours.
    assert out[3]["response"] == {"metadata": {"huxleyd_request": "r1"}}


def test_empty_audio_sends_nothing_and_odd_audio_is_refused() -> None:
    core = ready_core()
    core.append_audio(b"")
    assert core.messages_to_send() == []
    with pytest.raises(ValueError, match="even byte count"):
        core.append_audio(b"\x00\x01\x02")


def test_text_tool_output_and_out_of_band_requests() -> None:
    core = ready_core()
    core.send_user_text("what time is it")
    core.send_tool_output("call_1", '{"time": "15:10"}')
    core.request_response(instructions="Say hi.", out_of_band=True, metadata={"kind": "inject"})
    text, output, create = sent(core)
    assert text["item"] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "what time is it"}],
    }
    assert output["item"] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"time": "15:10"}',
    }
    assert create["response"] == {
        "instructions": "Say hi.",
        "conversation": "none",
        "metadata": {"kind": "inject", "huxleyd_request": "r1"},
    }


def test_audio_deltas_become_pcm_chunks_and_mark_the_response() -> None:
    core = ready_core()
    core.request_response()
    core.receive(frames.response_created("resp_1"))
    core.receive(frames.audio_delta("resp_1", "item_1", b"\x01\x02" * 480))
    core.receive(frames.response_done("resp_1"))
    started, chunk, done = core.events_received()
    assert started == ResponseStarted("resp_1")
    assert chunk == AudioChunk("resp_1", "item_1", b"\x01\x02" * 480)
    assert isinstance(done, ResponseDone)
    assert done.status is ResponseStatus.COMPLETED
    assert done.had_audio
    assert not core.response_active


def tracking(core: OpenAIRealtimeCore) -> tuple[bool, str | None]:
    return core.response_active, core.active_response_id


def test_response_tracking_from_request_to_done() -> None:
    core = ready_core()
    assert tracking(core) == (False, None)
    core.request_response()
    assert tracking(core) == (True, None)  # requested: a response is on its way
    core.receive(frames.response_created("resp_1"))
    assert tracking(core) == (True, "resp_1")
    core.receive(frames.response_done("resp_1"))
    assert tracking(core) == (False, None)


def test_cancel_sends_nothing_without_an_active_response() -> None:
    core = ready_core()
    assert core.cancel_response() is False
    assert core.messages_to_send() == []


def test_cancel_of_a_started_response_names_it_once_and_drops_its_late_audio() -> None:
    core = ready_core()
    core.request_response()
    core.receive(frames.response_created("resp_1"))
    core.messages_to_send()
    assert core.cancel_response() is True
    assert core.cancel_response() is False  # already asked: no second cancel
    [cancel] = sent(core)
    assert (cancel["type"], cancel["response_id"]) == ("response.cancel", "resp_1")
    core.events_received()
    core.receive(frames.audio_delta("resp_1", "item_1", b"\x00\x00" * 100))
    core.receive(frames.response_done("resp_1", status="cancelled", reason="client_cancelled"))
    [done] = core.events_received()
    assert done == ResponseDone("resp_1", ResponseStatus.CANCELLED, (), False, "client_cancelled")
    assert core.dropped_audio_chunks == 1


def test_cancel_of_a_requested_response_cancels_it_when_it_starts() -> None:
    core = ready_core()
    core.request_response()
    core.messages_to_send()
    assert core.cancel_response() is True
    [cancel] = sent(core)
    assert cancel["type"] == "response.cancel"
    assert "response_id" not in cancel
    assert core.cancel_response() is False
    core.receive(frames.response_created("resp_9"))
    core.receive(frames.audio_delta("resp_9", "item_9", b"\x00\x00"))
    assert not any(isinstance(e, AudioChunk) for e in core.events_received())


def test_truncate_sends_the_heard_length_and_drops_later_audio_of_that_item() -> None:
    core = ready_core()
    core.request_response()
    core.receive(frames.response_created("resp_1"))
    core.receive(frames.audio_delta("resp_1", "item_1", b"\x00\x00" * 10))
    core.messages_to_send()
    core.truncate("item_1", 1500)
    [truncate] = sent(core)
    assert truncate["type"] == "conversation.item.truncate"
    assert (truncate["item_id"], truncate["content_index"], truncate["audio_end_ms"]) == (
        "item_1",
        0,
        1500,
    )
    core.events_received()
    core.receive(frames.audio_delta("resp_1", "item_1", b"\x00\x00" * 10))
    core.receive(
        frames.frame(
            {
                "type": "conversation.item.truncated",
                "item_id": "item_1",
                "content_index": 0,
                "audio_end_ms": 1500,
            }
        )
    )
    assert core.events_received() == [ItemTruncated("item_1", 1500)]
    with pytest.raises(ValueError, match="audio_end_ms"):
        core.truncate("item_1", -1)


def test_tool_calls_are_reported_once_and_collected_per_response() -> None:
    core = ready_core()
    core.request_response()
    core.receive(frames.response_created("resp_1"))
    core.receive(frames.call_done("resp_1", "item_a", "call_a", "get_current_time", "{}"))
    core.receive(frames.call_item_done("resp_1", "item_a", "call_a", "get_current_time", "{}"))
    core.receive(frames.call_done("resp_1", "item_b", "call_b", "set_volume", '{"level":30}'))
    # A call seen only in response.done's output is still reported.
    late = wire.function_call_item("item_c", "call_c", "get_volume", "{}", "completed")
    core.receive(frames.response_done("resp_1", output=[late]))
    events = core.events_received()
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.call_id for c in calls] == ["call_a", "call_b", "call_c"]
    assert calls[1] == ToolCall("resp_1", "call_b", "set_volume", '{"level":30}')
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.tool_calls == tuple(calls)
    assert not done.had_audio
    assert core.pending_tool_calls == {"call_a", "call_b", "call_c"}
    core.send_tool_output("call_b", "{}")
    assert core.pending_tool_calls == {"call_a", "call_c"}


def test_committed_input_truncation_and_transcripts() -> None:
    core = ready_core()
    core.receive(frames.frame({"type": "input_audio_buffer.committed", "item_id": "item_u"}))
    core.receive(frames.frame(wire.transcription_completed("item_u", "what time is it", 1.2)))
    core.receive(
        frames.frame(
            wire.content_event(
                "response.output_audio_transcript.done", "resp_1", "item_1", transcript="Ten past."
            )
        )
    )
    assert core.events_received() == [
        InputCommitted("item_u"),
        TranscriptDone(Role.USER, "item_u", "what time is it"),
        TranscriptDone(Role.ASSISTANT, "item_1", "Ten past."),
    ]


def test_out_of_band_responses_do_not_occupy_the_conversation() -> None:
    core = ready_core()
    core.request_response(out_of_band=True)
    assert not core.response_active
    core.receive(frames.response_created("resp_oob", out_of_band=True))
    assert core.events_received() == [ResponseStarted("resp_oob", out_of_band=True)]
    assert core.active_response_id is None
    core.receive(frames.response_done("resp_oob", out_of_band=True))
    [done] = core.events_received()
    assert isinstance(done, ResponseDone)
    assert done.out_of_band


@pytest.mark.parametrize(
    "code",
    [
        "conversation_already_has_active_response",
        "input_audio_buffer_commit_empty",
        "response_cancel_not_active",
        "invalid_value",
    ],
)
def test_ordinary_errors_are_recoverable(code: str) -> None:
    core = ready_core()
    core.receive(frames.error(code, "no"))
    assert core.events_received() == [ProviderErrorEvent(code, "no", True)]


def test_session_expired_is_not_recoverable() -> None:
    core = ready_core()
    core.receive(frames.error("session_expired", "Your session hit the maximum duration."))
    [event] = core.events_received()
    assert isinstance(event, ProviderErrorEvent)
    assert not event.recoverable


def test_a_refused_response_create_is_no_longer_pending() -> None:
    core = ready_core()
    core.request_response()
    [create] = sent(core)
    core.receive(
        frames.error("conversation_already_has_active_response", event_id=create["event_id"])
    )
    assert not core.response_active
    [event] = core.events_received()
    assert isinstance(event, ProviderErrorEvent)
    assert event.client_event_id == create["event_id"]


def test_connection_lost_fails_the_running_response() -> None:
    core = ready_core()
    core.request_response()
    core.receive(frames.response_created("resp_1"))
    core.receive(frames.call_done("resp_1", "item_a", "call_a", "get_current_time", "{}"))
    core.events_received()
    core.connection_lost()
    [done] = core.events_received()
    assert isinstance(done, ResponseDone)
    assert done.status is ResponseStatus.FAILED
    assert done.reason == "connection_lost"
    assert [c.call_id for c in done.tool_calls] == ["call_a"]
    assert not core.response_active
    core.connection_opened()
    assert core.pending_tool_calls == frozenset()  # a new conversation owes nothing


@pytest.mark.parametrize(
    ("frame", "problem"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"event_id": "e"}', "no string 'type'"),
        (
            '{"type": "response.output_audio.delta", "event_id": "e", "item_id": "i", "delta": ""}',
            "'response_id' must be a string",
        ),
        (
            '{"type": "response.output_audio.delta", "event_id": "e", "response_id": "r",'
            ' "item_id": "i", "delta": "@@@"}',
            "not base64",
        ),
        ('{"type": "response.created", "event_id": "e", "response": []}', "must be an object"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_malformed_frames_are_logged_and_reported_never_raised(
    frame: str | bytes, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    core = ready_core()
    with caplog.at_level(logging.WARNING, logger="huxleyd.providers.openai"):
        core.receive(frame)
    [event] = core.events_received()
    assert isinstance(event, ProviderErrorEvent)
    assert event.code == "protocol_error"
    assert event.recoverable
    assert problem in event.message
    assert core.protocol_errors == 1
    assert "provider_protocol_error" in caplog.text


def test_unknown_events_are_logged_once_each_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    core = ready_core()
    with caplog.at_level(logging.INFO, logger="huxleyd.providers.openai"):
        for _ in range(3):
            core.receive('{"type": "response.brand_new_thing", "event_id": "e"}')
        core.receive('{"type": "another.new_thing", "event_id": "e"}')
    assert core.events_received() == []
    unknown = [r for r in caplog.records if "provider_event_unknown" in r.getMessage()]
    assert len(unknown) == 2


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from(
                        ["type", "response", "item_id", "response_id", "delta", "error", "id"]
                    ),
                    inner,
                    max_size=5,
                )
            ),
            max_leaves=12,
        ).map(json.dumps),
        st.sampled_from(
            [
                "response.created",
                "response.done",
                "response.output_audio.delta",
                "error",
                "conversation.item.truncated",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "session.updated",
            ]
        ).flatmap(
            lambda kind: st.dictionaries(
                st.sampled_from(
                    ["response", "item", "item_id", "response_id", "delta", "error", "name"]
                ),
                st.none() | st.integers() | st.text(max_size=8) | st.just({}) | st.just([]),
                max_size=4,
            ).map(lambda d: json.dumps({"type": kind, **d}))
        ),
    )
)
def test_no_frame_makes_receive_raise(frame: str | bytes) -> None:
    core = ready_core()
    core.request_response()
    core.receive(frame)  # must not raise, whatever arrives
    assert all(isinstance(e, EVENT_TYPES) for e in core.events_received())
