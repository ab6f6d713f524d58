"""OpenAI Realtime (GA) wire helpers: client frames out, field access in.

Layer: pure functions, no state, no I/O. :mod:`openai_core` keeps the
state and decides what to send; this module knows the JSON shapes (GA names:
``session.type = "realtime"``, ``audio.input.format``, ``output_audio``…).
Every frame built here validates against the official
``openai.types.realtime.RealtimeClientEvent`` union (tests check that).
"""

from __future__ import annotations

import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from huxleyd.errors import ProviderProtocolError
from huxleyd.pcm import RATE_HZ
from huxleyd.providers.core import excerpt, parse_json_object

# GA ``audio/pcm`` is 24 kHz only (the schema's rate is ``Literal[24000]``): the
# daemon's own rate, so nothing is resampled either way.
PCM_FORMAT: dict[str, Any] = {"type": "audio/pcm", "rate": RATE_HZ}

_APPEND_HEAD = '{"type":"input_audio_buffer.append","audio":"'


def digest(value: object) -> str:
    """A stable hash of a JSON-able value (to re-send only what changed)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def append_frame(pcm: bytes) -> str:
    """``input_audio_buffer.append`` for one mic frame, built without json.dumps.

    Base64 output never needs JSON escaping, so concatenation is exact and
    cheaper on the 50-frames-a-second path (see bench/bench_providers.py).
    """
    return _APPEND_HEAD + binascii.b2a_base64(pcm, newline=False).decode("ascii") + '"}'


def function_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A provider-neutral declaration (name, description, parameters) as a GA function tool."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool declaration needs a non-empty 'name', got {tool!r}")
    out: dict[str, Any] = {"type": "function", "name": name}
    description = tool.get("description")
    if description is not None:
        out["description"] = str(description)
    parameters = tool.get("parameters")
    out["parameters"] = (
        dict(parameters) if parameters is not None else {"type": "object", "properties": {}}
    )
    return out


def function_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every declaration converted; duplicate names are a programming error."""
    converted = [function_tool(t) for t in tools]
    names = [t["name"] for t in converted]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
    return converted


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """What a ``session.update`` carries: instructions, function tools (as
    :func:`function_tools` made them) and voice. The xAI shapes take it too."""

    instructions: str
    tools: list[dict[str, Any]]
    voice: str

    def digests(self) -> dict[str, str]:
        """One digest per part, to re-send only the parts that changed."""
        return {
            "instructions": digest(self.instructions),
            "tools": digest(self.tools),
            "voice": digest(self.voice),
        }


def full_session(config: SessionConfig, *, transcription_model: str | None) -> dict[str, Any]:
    """The whole GA session for push-to-talk: turn detection off, PCM 24 kHz both ways."""
    audio_input: dict[str, Any] = {"format": dict(PCM_FORMAT), "turn_detection": None}
    if transcription_model:
        audio_input["transcription"] = {"model": transcription_model}
    return {
        "type": "realtime",
        "output_modalities": ["audio"],
        "instructions": config.instructions,
        "audio": {
            "input": audio_input,
            "output": {"format": dict(PCM_FORMAT), "voice": config.voice},
        },
        "tools": config.tools,
        "tool_choice": "auto",
    }


def changed_session(config: SessionConfig, changed: Mapping[str, bool]) -> dict[str, Any] | None:
    """A GA session with only the parts whose ``changed`` flag is set; None when none is."""
    session: dict[str, Any] = {"type": "realtime"}
    if changed.get("instructions"):
        session["instructions"] = config.instructions
    if changed.get("tools"):
        session["tools"] = config.tools
    if changed.get("voice"):
        session["audio"] = {"output": {"voice": config.voice}}
    return session if len(session) > 1 else None


# ---------------------------------------------------------------- reading

IGNORED_EVENTS = frozenset(
    {
        "conversation.created",
        "conversation.item.added",
        "conversation.item.created",
        "conversation.item.deleted",
        "conversation.item.retrieved",
        "conversation.item.input_audio_transcription.segment",
        "input_audio_buffer.cleared",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.timeout_triggered",
        "rate_limits.updated",
        "response.output_item.added",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_audio.done",
        "response.function_call_arguments.delta",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
    }
)
"""Server events the core understands and deliberately does nothing with
(as opposed to unknown ones, which are logged once)."""


def response_reason(body: Mapping[str, Any]) -> str | None:
    """Why a response ended early: ``status_details.reason``, else its error code."""
    details = body.get("status_details")
    if not isinstance(details, dict):
        return None
    reason = optional_str(details, "reason")
    if reason is None and isinstance(details.get("error"), dict):
        reason = optional_str(details["error"], "code")
    return reason


def require_str(event: Mapping[str, Any], key: str) -> str:
    """``event[key]`` as a string, or a protocol error naming the event and key."""
    value = event.get(key)
    if not isinstance(value, str):
        raise ProviderProtocolError(
            f"{event.get('type')}: field {key!r} must be a string, got {_kind(value)}"
        )
    return value


def require_dict(event: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``event[key]`` as an object, or a protocol error naming the event and key."""
    value = event.get(key)
    if not isinstance(value, dict):
        raise ProviderProtocolError(
            f"{event.get('type')}: field {key!r} must be an object, got {_kind(value)}"
        )
    return value


def require_int(event: Mapping[str, Any], key: str) -> int:
    """``event[key]`` as an integer, or a protocol error naming the event and key."""
    value = event.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProviderProtocolError(
            f"{event.get('type')}: field {key!r} must be an integer, got {_kind(value)}"
        )
    return value


def optional_str(mapping: Mapping[str, Any] | None, key: str) -> str | None:
    """``mapping[key]`` when it is a string; None when absent, null or not a string."""
    if not mapping:
        return None
    value = mapping.get(key)
    return value if isinstance(value, str) else None


def decode_audio(event: Mapping[str, Any]) -> bytes:
    """The PCM bytes of an audio delta; a protocol error when not base64."""
    delta = require_str(event, "delta")
    try:
        return binascii.a2b_base64(delta, strict_mode=True)
    except binascii.Error as exc:
        raise ProviderProtocolError(f"{event.get('type')}: 'delta' is not base64 ({exc})") from exc


def parse_frame(frame: str | bytes) -> dict[str, Any]:
    """One frame as a JSON object with a string ``type``; a protocol error otherwise."""
    event = parse_json_object(frame)
    if not isinstance(event.get("type"), str):
        raise ProviderProtocolError(f"frame has no string 'type': {excerpt(frame)}")
    return event


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__
