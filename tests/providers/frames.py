"""Server frames for feeding provider cores, validated like the real server's.

Every frame goes through the simulator's :class:`~huxleyd.sim.wire.Outbox`,
so it is checked against the official ``RealtimeServerEvent`` union before a
test feeds it: the tests cannot drift into events the server never sends.
:func:`ready` readies any core; the OpenAI core's own helpers close the
module (``xai_frames`` and ``gemini_frames`` hold the other two cores').
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from huxleyd.providers.base import RealtimeCore
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.sim import wire
from huxleyd.sim.validate import validate_client_event

P = TypeVar("P", bound=RealtimeCore)

_outbox = wire.Outbox()


def frame(event: dict[str, Any]) -> str:
    return _outbox.encode(event)


def session_created() -> str:
    return frame({"type": "session.created", "session": wire.default_session("gpt-realtime")})


def session_updated() -> str:
    return frame({"type": "session.updated", "session": wire.default_session("gpt-realtime")})


def response_created(response_id: str, *, out_of_band: bool = False) -> str:
    body = wire.response(
        response_id, status="in_progress", output=[], out_of_band=out_of_band, voice="marin"
    )
    return frame({"type": "response.created", "response": body})


def response_done(
    response_id: str,
    *,
    status: str = "completed",
    reason: str | None = None,
    output: list[dict[str, Any]] | None = None,
    out_of_band: bool = False,
) -> str:
    body = wire.response(
        response_id,
        status=status,
        output=output or [],
        out_of_band=out_of_band,
        voice="marin",
        reason=reason,
    )
    return frame({"type": "response.done", "response": body})


def audio_delta(response_id: str, item_id: str, pcm: bytes) -> str:
    delta = base64.b64encode(pcm).decode("ascii")
    return frame(
        wire.content_event("response.output_audio.delta", response_id, item_id, delta=delta)
    )


def call_done(response_id: str, item_id: str, call_id: str, name: str, arguments: str) -> str:
    return frame(
        {
            "type": "response.function_call_arguments.done",
            "response_id": response_id,
            "item_id": item_id,
            "output_index": 0,
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
        }
    )


def call_item_done(response_id: str, item_id: str, call_id: str, name: str, args: str) -> str:
    item = wire.function_call_item(item_id, call_id, name, args, "completed")
    return frame(wire.output_item_event("done", response_id, 0, item))


def error(code: str, message: str = "simulated", event_id: str | None = None) -> str:
    return frame(wire.error(code, message, event_id=event_id))


def ready(
    core: P, handshake: Sequence[str | bytes], *, tools: Sequence[Mapping[str, Any]], voice: str
) -> P:
    """``core`` configured, its connection open, the server's ``handshake`` frames
    received, and what that produced drained: a session ready for a test."""
    core.configure(instructions="Be brief.", tools=tools, voice=voice)
    core.connection_opened()
    for server_frame in handshake:
        core.receive(server_frame)
    core.messages_to_send()
    core.events_received()
    return core


# ---------------------------------------------------------------- the OpenAI core

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_current_time",
        "description": "Get the time.",
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "set_volume",
        "description": "Set the volume.",
        "parameters": {
            "type": "object",
            "properties": {"level": {"type": "integer"}},
            "required": ["level"],
        },
    },
]


def sent(core: OpenAIRealtimeCore) -> list[dict[str, Any]]:
    """What the core wants to send, each frame validated as a GA client event."""
    out = []
    for message in core.messages_to_send():
        validate_client_event(message)
        assert isinstance(message, str)
        out.append(json.loads(message))
    return out


def ready_core(**kwargs: Any) -> OpenAIRealtimeCore:
    """A configured core on an open connection whose session is ready."""
    handshake = (session_created(), session_updated())
    return ready(OpenAIRealtimeCore(**kwargs), handshake, tools=TOOLS, voice="marin")
