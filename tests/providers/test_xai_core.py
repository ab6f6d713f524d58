"""The sans-I/O xAI core: the flat session, and barge-in as a local cut."""

from __future__ import annotations

import json

import pytest

from huxleyd.providers.base import InterruptAcceptance, RealtimeCore
from huxleyd.providers.events import (
    AudioChunk,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    Role,
    SessionReady,
    ToolCall,
    TranscriptDelta,
    TranscriptDone,
)
from huxleyd.providers.xai_core import CANCELLED_OUTPUT, XaiRealtimeCore
from huxleyd.sim import wire
from huxleyd.sim.xai_validate import validate_xai_client_event
from tests.providers import frames
from tests.providers.xai_frames import (
    TOOLS,
    conversation_created,
    ready_core,
    sent,
    session_created,
    session_updated,
    start_response,
    types,
)

PCM = b"\x01\x00" * 480


def test_capabilities_say_local_cut_without_cancel_or_truncate() -> None:
    core = XaiRealtimeCore()
    assert isinstance(core, RealtimeCore)
    caps = core.capabilities
    assert not caps.response_cancel and not caps.truncate
    assert caps.interrupt_acceptance is InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION
    assert caps.input_rate_hz == caps.output_rate_hz == 24_000


def test_the_session_is_flat_and_ready_after_session_updated() -> None:
    core = XaiRealtimeCore()
    core.configure(instructions="Be brief.", tools=TOOLS, voice="eve")
    core.connection_opened()
    [update] = sent(core)
    session = update["session"]
    assert "type" not in session
    # The documented push-to-talk form (issue 14 item 7), not a null object.
    assert session["voice"] == "eve" and session["turn_detection"] == {"type": None}
    assert session["instructions"] == "Be brief."
    assert session["audio"]["output"] == {"format": {"type": "audio/pcm", "rate": 24000}}
    assert session["tools"][0]["name"] == "get_current_time"
    core.receive(conversation_created())
    assert core.events_received() == []  # configured: ready only once our session applies
    core.receive(session_updated())
    assert core.events_received() == [SessionReady(None)]


def test_without_configuration_conversation_created_means_ready() -> None:
    core = XaiRealtimeCore()
    core.connection_opened()
    core.receive(conversation_created())
    assert core.events_received() == [SessionReady("conv_1")]


def test_session_created_first_then_conversation_created_is_one_ready() -> None:
    # xAI's server sends session.created first since May 2026, then
    # conversation.created; either one opens the session, and only once.
    core = XaiRealtimeCore()
    core.connection_opened()
    core.receive(session_created())
    core.receive(conversation_created())
    assert core.events_received() == [SessionReady(None)]


def test_only_what_changed_is_sent_again() -> None:
    core = ready_core()
    core.configure(instructions="Be brief.", tools=TOOLS, voice="ara")
    assert [e["session"] for e in sent(core)] == [{"voice": "ara"}]
    core.configure(instructions="Be brief.", tools=TOOLS, voice="ara")
    assert sent(core) == []


def test_a_push_to_talk_turn_in_xai_events() -> None:
    core = ready_core()
    core.start_turn()
    core.append_audio(PCM)
    core.end_turn()
    core.request_response(instructions="Say hi.")
    out = sent(core)
    assert types(out) == [
        "input_audio_buffer.clear",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "response.create",
    ]
    assert out[-1]["response"] == {"instructions": "Say hi."}


def test_barge_in_is_a_local_cut_and_the_next_create_waits() -> None:
    core = ready_core()
    start_response(core)
    core.receive(frames.audio_delta("resp_1", "item_1", PCM))
    assert [type(e) for e in core.events_received()] == [ResponseStarted, AudioChunk]
    core.start_turn()  # the user presses while the reply plays
    core.receive(frames.audio_delta("resp_1", "item_1", PCM))
    assert core.events_received() == []
    assert core.dropped_audio_chunks == 1
    core.append_audio(PCM)
    core.end_turn()
    core.request_response()
    assert types(sent(core)) == [
        "input_audio_buffer.clear",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
    ]  # no response.cancel, no truncate, and the create waits for resp_1
    assert core.response_active
    core.receive(frames.response_done("resp_1"))
    [done] = core.events_received()
    assert done == ResponseDone("resp_1", ResponseStatus.CANCELLED, (), True, "local_cut")
    assert types(sent(core)) == ["response.create"]


def test_a_create_superseded_before_it_started_is_never_reported() -> None:
    core = ready_core()
    core.request_response()
    sent(core)
    core.start_turn()
    core.receive(frames.response_created("resp_old"))
    core.receive(frames.audio_delta("resp_old", "item_1", PCM))
    core.receive(frames.call_done("resp_old", "item_2", "call_1", "get_current_time", "{}"))
    core.receive(frames.response_done("resp_old"))
    assert core.events_received() == []
    out = sent(core)
    # The call still gets an output, though nobody wants the reply.
    assert out[-1]["item"] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": CANCELLED_OUTPUT,
    }
    assert not core.response_active and core.pending_tool_calls == frozenset()


def test_a_second_request_while_one_waits_goes_out_at_once() -> None:
    core = ready_core()
    start_response(core)
    core.request_response()  # waits: resp_1 runs
    assert sent(core) == []
    core.request_response()  # asked again: resp_1 may be hung
    assert types(sent(core)) == ["response.create"]


def test_cancel_and_truncate_send_nothing() -> None:
    core = ready_core()
    start_response(core)
    assert core.cancel_response() is False
    core.truncate("item_1", 300)
    assert sent(core) == []
    assert core.active_response_id is None
    with pytest.raises(ValueError, match="audio_end_ms"):
        core.truncate("item_1", -1)


def test_tool_calls_are_reported_and_the_response_carries_them() -> None:
    core = ready_core()
    start_response(core)
    core.receive(frames.call_done("resp_1", "item_2", "call_1", "get_current_time", "{}"))
    core.receive(frames.response_done("resp_1"))
    events = core.events_received()
    call = ToolCall("resp_1", "call_1", "get_current_time", "{}")
    assert events[1:] == [call, ResponseDone("resp_1", ResponseStatus.COMPLETED, (call,))]
    assert core.pending_tool_calls == {"call_1"}
    core.send_tool_output("call_1", '{"time": "now"}')
    assert sent(core)[0]["item"]["output"] == '{"time": "now"}'
    assert core.pending_tool_calls == frozenset()


def test_a_refused_create_is_forgotten_and_a_waiting_one_goes_out() -> None:
    core = ready_core()
    core.request_response()
    [create] = sent(core)
    core.request_response()  # waits behind the first
    assert sent(core) == []
    core.receive(frames.error("server_error", event_id=create["event_id"]))
    assert [type(e) for e in core.events_received()] == [ProviderErrorEvent]
    assert types(sent(core)) == ["response.create"]


def test_text_stream_and_ping_are_understood() -> None:
    core = ready_core()
    start_response(core)
    core.events_received()
    delta = {
        "type": "response.text.delta",
        "response_id": "resp_1",
        "item_id": "item_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "hi",
    }
    core.receive(json.dumps(delta))
    core.receive(json.dumps({"type": "ping", "event_id": "e", "timestamp": 1}))
    assert core.events_received() == [TranscriptDelta(Role.ASSISTANT, "item_1", "hi")]
    assert core.protocol_errors == 0


@pytest.mark.parametrize("stream", ["response.text", "response.output_text"])
def test_both_names_of_the_text_stream_carry_the_text(stream: str) -> None:
    # xAI's reference calls the beta and GA names functionally identical: if
    # the server sends the GA name the words must not be lost as "unknown".
    core = ready_core()
    start_response(core)
    core.events_received()
    where = {"response_id": "resp_1", "item_id": "item_1", "output_index": 0, "content_index": 0}
    core.receive(json.dumps({"type": f"{stream}.delta", **where, "delta": "hi"}))
    core.receive(json.dumps({"type": f"{stream}.done", **where, "text": "hi"}))
    assert core.events_received() == [
        TranscriptDelta(Role.ASSISTANT, "item_1", "hi"),
        TranscriptDone(Role.ASSISTANT, "item_1", "hi"),
    ]
    assert core.protocol_errors == 0


def test_a_lost_connection_fails_the_reported_response() -> None:
    core = ready_core()
    start_response(core)
    core.events_received()
    core.request_response()  # waiting: forgotten with the connection
    core.connection_lost()
    assert core.events_received() == [
        ResponseDone("resp_1", ResponseStatus.FAILED, (), False, "connection_lost")
    ]
    assert core.messages_to_send() == [] and not core.response_active


def test_a_malformed_frame_is_reported_not_raised() -> None:
    core = ready_core()
    core.receive(b"\xff not json")
    core.receive(json.dumps({"type": "response.output_audio.delta", "response_id": 3}))
    events = core.events_received()
    assert [e.code for e in events if isinstance(e, ProviderErrorEvent)] == ["protocol_error"] * 2
    assert core.protocol_errors == 2


def test_the_openai_session_shape_is_refused_by_the_xai_field_sets() -> None:
    ga = {"type": "session.update", "session": {"type": "realtime", "audio": {}}}
    with pytest.raises(Exception, match="no 'type'"):
        validate_xai_client_event(json.dumps(ga))
    with pytest.raises(Exception, match="not supported"):
        validate_xai_client_event(json.dumps({"type": "conversation.item.truncate"}))
    nested = {"type": "session.update", "session": {"audio": {"output": {"voice": "eve"}}}}
    with pytest.raises(Exception, match="top level"):
        validate_xai_client_event(json.dumps(nested))
    assert wire.merge({"a": {"b": 1}}, {"a": None}) == {"a": None}
