"""What the OpenAI and xAI cores do the same way, because they share the GA
dialect: the URL and key, configuration re-sent only where it changed, one
report per tool call, the errors that end a session, and responses the
connection took with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from huxleyd.providers.events import (
    AudioChunk,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    ToolCall,
)
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.openai_dialect import SESSION_ENDING_CODES, STATUS, OpenAIDialectCore
from huxleyd.providers.xai_core import XaiRealtimeCore
from huxleyd.sim import wire as sim_wire
from tests.providers import frames, xai_frames

Core = OpenAIRealtimeCore | XaiRealtimeCore
CORES: dict[str, Callable[[], Core]] = {
    "openai": frames.ready_core,
    "xai": xai_frames.ready_core,
}


@pytest.fixture(params=sorted(CORES))
def core(request: pytest.FixtureRequest) -> Core:
    return CORES[request.param]()


def sent(core: Core) -> list[dict[str, Any]]:
    return [json.loads(m) for m in core.messages_to_send()]


def started(core: Core, response_id: str = "resp_1") -> None:
    core.request_response()
    core.receive(frames.response_created(response_id))
    core.messages_to_send()
    assert core.events_received() == [ResponseStarted(response_id, False)]


def test_both_cores_are_the_dialect() -> None:
    assert issubclass(OpenAIRealtimeCore, OpenAIDialectCore)
    assert issubclass(XaiRealtimeCore, OpenAIDialectCore)


def test_the_model_goes_in_the_query_and_the_key_in_a_bearer_header(
    core: Core,
) -> None:
    assert core.connection_url("wss://h/v1/realtime", "m 1") == "wss://h/v1/realtime?model=m+1"
    assert core.connection_url("wss://h/v1/realtime?x=1", "m") == "wss://h/v1/realtime?x=1&model=m"
    assert core.connection_headers("sk-1") == {"Authorization": "Bearer sk-1"}
    assert core.connection_headers(None) == {}


def test_configuration_goes_again_only_where_it_changed(core: Core) -> None:
    tools = [{"name": "get_current_time", "parameters": {"type": "object"}}]
    core.configure(instructions="Be brief.", tools=tools, voice="marin")
    first = sent(core)  # the ready core had other tools: those go
    assert [e["type"] for e in first] == ["session.update"]
    assert "tools" in first[0]["session"] and "instructions" not in first[0]["session"]
    core.configure(instructions="Be brief.", tools=tools, voice="marin")
    assert sent(core) == []  # nothing changed: nothing sent
    core.configure(instructions="Be kind.", tools=tools, voice="marin")
    (update,) = sent(core)
    assert update["session"]["instructions"] == "Be kind." and "tools" not in update["session"]
    core.connection_opened()  # a new connection gets all of it
    (full,) = sent(core)
    assert {"instructions", "tools"} <= set(full["session"])


def test_a_tool_call_named_three_times_is_reported_once(core: Core) -> None:
    started(core)
    core.receive(frames.call_done("resp_1", "item_1", "call_1", "get_current_time", "{}"))
    core.receive(frames.call_item_done("resp_1", "item_1", "call_1", "get_current_time", "{}"))
    item = sim_wire.function_call_item("item_1", "call_1", "get_current_time", "{}", "completed")
    core.receive(frames.response_done("resp_1", output=[item]))
    call = ToolCall("resp_1", "call_1", "get_current_time", "{}")
    events = core.events_received()
    assert events == [call, ResponseDone("resp_1", ResponseStatus.COMPLETED, (call,))]
    assert core.pending_tool_calls == {"call_1"}
    core.send_tool_output("call_1", '{"time": "10:00"}')
    assert core.pending_tool_calls == frozenset()


@pytest.mark.parametrize("code", sorted(SESSION_ENDING_CODES))
def test_the_session_ending_errors_are_not_recoverable(core: Core, code: str) -> None:
    core.receive(frames.error(code))
    (event,) = core.events_received()
    assert isinstance(event, ProviderErrorEvent) and event.code == code and not event.recoverable


@pytest.mark.parametrize(
    ("code", "named"),
    [("invalid_value", True), ("conversation_already_has_active_response", False)],
    ids=["by-event-id", "newest"],
)
def test_a_refused_create_is_a_recoverable_error_and_forgotten(code: str, named: bool) -> None:
    core = frames.ready_core()  # xAI holds a second create back instead of sending it
    started(core)
    core.request_response()
    (create,) = sent(core)
    event_id = create["event_id"] if named else None
    core.receive(frames.error(code, event_id=event_id))
    (event,) = core.events_received()
    assert isinstance(event, ProviderErrorEvent) and event.recoverable
    assert event.client_event_id == event_id
    core.receive(frames.response_done("resp_1"))
    assert not core.response_active  # the refused create is not waiting for a response


def test_the_wire_status_is_ours_and_unknown_ones_fail() -> None:
    assert STATUS == {
        "completed": ResponseStatus.COMPLETED,
        "cancelled": ResponseStatus.CANCELLED,
        "failed": ResponseStatus.FAILED,
        "incomplete": ResponseStatus.INCOMPLETE,
    }


def test_an_incomplete_response_says_why(core: Core) -> None:
    started(core)
    core.receive(frames.response_done("resp_1", status="incomplete", reason="max_output_tokens"))
    (done,) = core.events_received()
    assert isinstance(done, ResponseDone)
    assert (done.status, done.reason) == (ResponseStatus.INCOMPLETE, "max_output_tokens")


def test_a_lost_connection_fails_what_was_running(core: Core) -> None:
    started(core)
    core.connection_lost()
    assert core.events_received() == [
        ResponseDone("resp_1", ResponseStatus.FAILED, reason="connection_lost")
    ]
    assert not core.response_active


def test_audio_of_a_cut_item_is_dropped_and_counted(core: Core) -> None:
    started(core)
    core.receive(frames.audio_delta("resp_1", "item_1", b"\1\0" * 240))
    core.truncate("item_1", 10)
    core.receive(frames.audio_delta("resp_1", "item_1", b"\2\0" * 240))
    core.receive(frames.audio_delta("resp_1", "item_2", b"\3\0" * 240))
    chunks = [e for e in core.events_received() if isinstance(e, AudioChunk)]
    assert [(c.item_id, c.pcm[:1]) for c in chunks] == [("item_1", b"\1"), ("item_2", b"\3")]
    assert core.dropped_audio_chunks == 1
