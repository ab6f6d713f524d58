"""Validation of Gemini Live messages, against ``google.genai.types`` when installed.

Layer: pure functions. With ``google-genai`` installed (the test extra),
every client message is checked by ``LiveClientMessage`` (pydantic,
``extra="forbid"``, both spellings accepted, base64 bytes). That model has
no ``realtime_input_config`` in its setup (a gap of the SDK's own types,
see the reference), so the sim pops ``realtimeInputConfig`` from the setup
and checks it with ``RealtimeInputConfig`` on its own. Without the package,
a structural check of the top-level shapes runs instead, and
:data:`HAVE_GENAI` says which one ran.

Either way a message must have exactly one top-level key.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from huxleyd.errors import ProviderProtocolError

genai_types: Any
try:  # the test extra; the daemon itself never needs it (imported by name: no stubs needed)
    genai_types = importlib.import_module("google.genai.types")
except ImportError:  # pragma: no cover - depends on the environment
    genai_types = None

HAVE_GENAI = genai_types is not None

CLIENT_KEYS = {
    "setup": "setup",
    "clientContent": "clientContent",
    "client_content": "clientContent",
    "realtimeInput": "realtimeInput",
    "realtime_input": "realtimeInput",
    "toolResponse": "toolResponse",
    "tool_response": "toolResponse",
}
"""Top-level client keys in either spelling → their camelCase name."""

_REALTIME_KEYS = {
    "audio",
    "video",
    "text",
    "activityStart",
    "activity_start",
    "activityEnd",
    "activity_end",
    "audioStreamEnd",
    "audio_stream_end",
    "mediaChunks",
    "media_chunks",
}


def validate_gemini_client_message(frame: str | bytes) -> tuple[str, dict[str, Any]]:
    """``(camelCase top-level key, the message)``, or :class:`ProviderProtocolError`."""
    try:
        message = json.loads(frame)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProviderProtocolError(f"client message is not JSON ({exc})") from exc
    if not isinstance(message, dict) or len(message) != 1:
        keys = sorted(message) if isinstance(message, dict) else type(message).__name__
        raise ProviderProtocolError(f"a client message has exactly one top-level key, got {keys}")
    key = next(iter(message))
    if key not in CLIENT_KEYS:
        raise ProviderProtocolError(f"unknown client message {key!r}")
    if not isinstance(message[key], dict):
        raise ProviderProtocolError(f"{key} must be an object")
    if HAVE_GENAI:
        _validate_typed(message)
    else:
        _validate_shape(CLIENT_KEYS[key], message[key])
    return CLIENT_KEYS[key], message


def _validate_typed(message: dict[str, Any]) -> None:
    checked = json.loads(json.dumps(message))
    setup = checked.get("setup")
    if isinstance(setup, dict):
        for spelling in ("realtimeInputConfig", "realtime_input_config"):
            config = setup.pop(spelling, None)
            if config is not None:
                _typed(genai_types.RealtimeInputConfig, config, f"setup.{spelling}")
    _typed(genai_types.LiveClientMessage, checked, next(iter(message)))


def _typed(model: Any, value: Any, where: str) -> None:
    try:
        model.model_validate_json(json.dumps(value))
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '$'}: {e['msg']}" for e in exc.errors()[:4]
        )
        raise ProviderProtocolError(f"invalid {where}: {problems}") from exc


def _validate_shape(key: str, body: dict[str, Any]) -> None:
    if key == "setup" and not isinstance(body.get("model"), str):
        raise ProviderProtocolError("setup.model must be a string")
    if key == "realtimeInput" and (len(body) != 1 or next(iter(body)) not in _REALTIME_KEYS):
        raise ProviderProtocolError(f"realtimeInput must hold one input, got {sorted(body)}")
    if key == "toolResponse":
        responses = body.get("functionResponses", body.get("function_responses"))
        if not isinstance(responses, list) or not all(
            isinstance(r, dict) and isinstance(r.get("response"), dict) for r in responses
        ):
            raise ProviderProtocolError("toolResponse.functionResponses must be objects")
    if key == "clientContent":
        turns = body.get("turns", [])
        if not isinstance(turns, list):
            raise ProviderProtocolError("clientContent.turns must be a list")


def validate_gemini_server_message(message: dict[str, Any]) -> None:
    """Check a message the sim is about to send (``LiveServerMessage``), when installed."""
    if HAVE_GENAI:
        _typed(genai_types.LiveServerMessage, message, "server message")
