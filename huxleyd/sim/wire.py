"""Server events of the OpenAI Realtime GA protocol, as the simulator sends them.

Layer: pure functions building JSON-able dicts. :class:`Outbox` stamps each
with an ``event_id`` and validates it against the official
``RealtimeServerEvent`` union (strictly: tagged union + no unknown keys)
before it is encoded, so the sim cannot send what the real server would not.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from huxleyd.sim.validate import validate_server_event

PCM_FORMAT: dict[str, Any] = {"type": "audio/pcm", "rate": 24_000}

_session_ids = itertools.count(1)


def obfuscation(delta: str) -> str:
    """Padding the real server adds to streamed text deltas (a random string whose
    length hides the delta's); ours is fixed, since only its presence matters."""
    return "x" * (16 - len(delta) % 16)


SESSION_LIFETIME_S = 60 * 60
"""The real service's session cap, which its ``expires_at`` announces."""


def default_session(model: str, *, now_s: int = 1_761_230_000) -> dict[str, Any]:
    """The session a fresh connection starts with (server VAD on, like the real one),
    with the keys the real one carries beyond the SDK's model (``object``, ``id``,
    ``expires_at``)."""
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": f"sess_sim_{next(_session_ids)}",
        "expires_at": now_s + SESSION_LIFETIME_S,
        "model": model,
        "output_modalities": ["audio"],
        "instructions": "",
        "audio": {
            "input": {
                "format": dict(PCM_FORMAT),
                "transcription": None,
                "noise_reduction": None,
                "turn_detection": {
                    "type": "server_vad",
                    "threshold": 0.5,
                    "prefix_padding_ms": 300,
                    "silence_duration_ms": 200,
                    "create_response": True,
                    "interrupt_response": True,
                },
            },
            "output": {"format": dict(PCM_FORMAT), "voice": "marin", "speed": 1.0},
        },
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "tracing": None,
        "truncation": "auto",
    }


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` laid over ``base``: objects merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


class Outbox:
    """Stamps event ids and validates server events; hands out JSON text."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def encode(self, event: dict[str, Any]) -> str:
        """The event as a frame. Raises ProviderProtocolError if the sim built it wrong."""
        event = {"event_id": f"event_sim_{next(self._ids)}", **event}
        validate_server_event(event)
        return json.dumps(event, separators=(",", ":"))


# ---------------------------------------------------------------- items


def user_audio_item(item_id: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "user",
        "status": status,
        "content": [{"type": "input_audio", "transcript": None}],
    }


def assistant_item(item_id: str, status: str, transcript: str | None) -> dict[str, Any]:
    content = [] if transcript is None else [{"type": "output_audio", "transcript": transcript}]
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def function_call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str
) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def with_id(item: dict[str, Any], item_id: str) -> dict[str, Any]:
    """A client-created item as the server echoes it: with id, object and status."""
    return {**item, "id": item_id, "object": "realtime.item", "status": "completed"}


def response(
    response_id: str,
    *,
    status: str,
    output: list[dict[str, Any]],
    out_of_band: bool,
    voice: str,
    metadata: dict[str, str] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": response_id,
        "object": "realtime.response",
        "status": status,
        "output": output,
        "conversation_id": None if out_of_band else "conv_sim",
        "output_modalities": ["audio"],
        "audio": {"output": {"format": dict(PCM_FORMAT), "voice": voice}},
        "max_output_tokens": "inf",
        "metadata": metadata,
    }
    if status != "in_progress":
        details: dict[str, Any] = {"type": status}
        if reason is not None:
            details["reason"] = reason
        body["status_details"] = details
        body["usage"] = {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0}
    return body


def error(
    code: str, message: str, *, kind: str = "invalid_request_error", event_id: str | None = None
) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {
            "type": kind,
            "code": code,
            "message": message,
            "param": None,
            "event_id": event_id,
        },
    }


def transcription_completed(item_id: str, transcript: str, seconds: float) -> dict[str, Any]:
    return {
        "type": "conversation.item.input_audio_transcription.completed",
        "item_id": item_id,
        "content_index": 0,
        "transcript": transcript,
        "usage": {"type": "duration", "seconds": seconds},
    }


def part_event(kind: str, response_id: str, item_id: str, part: dict[str, Any]) -> dict[str, Any]:
    """``response.content_part.added`` / ``.done``."""
    return {
        "type": f"response.content_part.{kind}",
        "response_id": response_id,
        "item_id": item_id,
        "output_index": 0,
        "content_index": 0,
        "part": part,
    }


def content_event(event_type: str, response_id: str, item_id: str, **fields: Any) -> dict[str, Any]:
    """Any ``response.output_audio*`` event of content part 0."""
    return {
        "type": event_type,
        "response_id": response_id,
        "item_id": item_id,
        "output_index": 0,
        "content_index": 0,
        **fields,
    }


def output_item_event(
    kind: str, response_id: str, output_index: int, item: dict[str, Any]
) -> dict[str, Any]:
    """``response.output_item.added`` / ``.done``."""
    return {
        "type": f"response.output_item.{kind}",
        "response_id": response_id,
        "output_index": output_index,
        "item": item,
    }


def conversation_item_event(
    kind: str, item: dict[str, Any], previous_item_id: str | None
) -> dict[str, Any]:
    """``conversation.item.added`` / ``.done``."""
    return {"type": f"conversation.item.{kind}", "item": item, "previous_item_id": previous_item_id}
