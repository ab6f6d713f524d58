"""Feeding the sans-I/O xAI core: server frames xAI sends, what the core sends
checked against xAI's field sets, and a core whose session is ready."""

from __future__ import annotations

from typing import Any

from huxleyd.providers.xai_core import XaiRealtimeCore
from huxleyd.sim.xai_session import XaiOutbox, default_session
from huxleyd.sim.xai_validate import validate_xai_client_event
from tests.providers import frames

TOOLS = [{"name": "get_current_time", "description": "The time.", "parameters": {"type": "object"}}]

_outbox = XaiOutbox()


def conversation_created() -> str:
    conversation = {"id": "conv_1", "object": "realtime.conversation"}
    return _outbox.encode({"type": "conversation.created", "conversation": conversation})


def session_created() -> str:
    """xAI's first event since May 2026 (the flat session as it starts)."""
    return _outbox.encode({"type": "session.created", "session": default_session()})


def session_updated() -> str:
    return _outbox.encode({"type": "session.updated", "session": default_session()})


def sent(core: XaiRealtimeCore) -> list[dict[str, Any]]:
    """What the core wants to send, each frame checked against xAI's field sets."""
    out = []
    for message in core.messages_to_send():
        assert isinstance(message, str)
        out.append(validate_xai_client_event(message))
    return out


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def ready_core() -> XaiRealtimeCore:
    handshake = (session_created(), conversation_created(), session_updated())
    return frames.ready(XaiRealtimeCore(), handshake, tools=TOOLS, voice="eve")


def start_response(core: XaiRealtimeCore, response_id: str = "resp_1") -> None:
    core.request_response()
    assert types(sent(core)) == ["response.create"]
    core.receive(frames.response_created(response_id))
