"""Feeding the sans-I/O Gemini Live core: server messages as the real server
sends them (checked), the client messages it sends (checked, labelled), and a
core whose session is ready."""

from __future__ import annotations

import base64
import json
from typing import Any

from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.sim.gemini_validate import (
    validate_gemini_client_message,
    validate_gemini_server_message,
)
from tests.providers import frames

_SET_VOLUME = next(tool for tool in frames.TOOLS if tool["name"] == "set_volume")
TOOLS = [  # Gemini's declarations are closed objects: no extra arguments
    {**_SET_VOLUME, "parameters": {**_SET_VOLUME["parameters"], "additionalProperties": False}}
]


def server(message: dict[str, Any], *, binary: bool = True) -> str | bytes:
    """A server message as the real server sends it: checked, JSON in a binary frame."""
    validate_gemini_server_message(message)
    text = json.dumps(message)
    return text.encode() if binary else text


def audio(pcm: bytes) -> str | bytes:
    data = base64.b64encode(pcm).decode()
    part = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": data}}
    return server({"serverContent": {"modelTurn": {"role": "model", "parts": [part]}}})


def content(**fields: Any) -> str | bytes:
    return server({"serverContent": fields})


def sent(core: GeminiLiveCore) -> list[tuple[str, dict[str, Any]]]:
    """(label, body) of each client message, each validated."""
    out = []
    for message in core.messages_to_send():
        key, parsed = validate_gemini_client_message(message)
        body = parsed[key]
        label = f"{key}.{next(iter(body))}" if key == "realtimeInput" else key
        out.append((label, body))
    return out


def labels(messages: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [label for label, _ in messages]


def wanted(core: GeminiLiveCore) -> str | None:
    """``reconnect_wanted`` read afresh (a function, so mypy does not narrow it)."""
    return core.reconnect_wanted


def ready_core(**kwargs: Any) -> GeminiLiveCore:
    core = GeminiLiveCore(model="gemini-live-2.5-flash-preview", **kwargs)
    return frames.ready(core, [server({"setupComplete": {}})], tools=TOOLS, voice="Puck")
