"""Structural validation of xAI voice agent client events.

Layer: pure functions. There is no official typed package for xAI's
dialect, so the simulator checks each client event against the field sets
of the reference notes (pipecat's xAI events, docs.x.ai excerpts): known
event types only, required and optional keys per type, the flat session
(``voice`` and ``turn_detection`` at the top level, no ``session.type``),
and the events xAI does not have (``conversation.item.truncate`` …).
Written apart from the client core on purpose: a test of the core against
its own constants could not fail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from huxleyd.errors import ProviderProtocolError

_EVENTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys besides "type", optional keys)
    "session.update": (frozenset({"session"}), frozenset({"event_id"})),
    "input_audio_buffer.append": (frozenset({"audio"}), frozenset({"event_id"})),
    "input_audio_buffer.commit": (frozenset(), frozenset({"event_id"})),
    "input_audio_buffer.clear": (frozenset(), frozenset({"event_id"})),
    "conversation.item.create": (frozenset({"item"}), frozenset({"event_id", "previous_item_id"})),
    "response.create": (frozenset(), frozenset({"event_id", "response"})),
    "response.cancel": (frozenset(), frozenset({"event_id", "response_id"})),
}

UNSUPPORTED = frozenset(
    {
        "conversation.item.truncate",
        "conversation.item.retrieve",
        "conversation.item.delete",
        "output_audio_buffer.clear",
        "transcription_session.update",
    }
)

_SESSION = frozenset(
    {"instructions", "voice", "turn_detection", "audio", "tools", "tool_choice", "reasoning"}
)
_TURN_DETECTION = frozenset(
    {"type", "threshold", "silence_duration_ms", "prefix_padding_ms", "idle_timeout_ms"}
)
_RATES = frozenset({8000, 16000, 22050, 24000, 32000, 44100, 48000})
_TOOL_KINDS = frozenset({"function", "web_search", "x_search", "file_search", "mcp"})
_RESPONSE = frozenset({"instructions", "modalities", "tools", "tool_choice"})


def validate_xai_client_event(frame: str | bytes) -> dict[str, Any]:
    """The event as a dict, or :class:`ProviderProtocolError` saying what is wrong."""
    try:
        event = json.loads(frame)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProviderProtocolError(f"invalid client event: not JSON ({exc})") from exc
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise ProviderProtocolError("invalid client event: not an object with a string 'type'")
    kind = event["type"]
    if kind in UNSUPPORTED:
        raise ProviderProtocolError(f"{kind!r} is not supported by the xAI voice agent API")
    if kind not in _EVENTS:
        raise ProviderProtocolError(f"unknown client event type {kind!r}")
    required, optional = _EVENTS[kind]
    _keys(kind, event, required | {"type"}, optional)
    check = _DEEP.get(kind)
    if check is not None:
        check(event)
    return event


def _keys(
    where: str, value: Mapping[str, Any], required: frozenset[str], optional: frozenset[str]
) -> None:
    missing = sorted(required - value.keys())
    unknown = sorted(value.keys() - required - optional)
    if missing:
        raise ProviderProtocolError(f"{where}: missing {', '.join(missing)}")
    if unknown:
        raise ProviderProtocolError(f"{where}: unknown fields {', '.join(unknown)}")


def _dict(where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProviderProtocolError(f"{where} must be an object")
    return value


def _session(event: dict[str, Any]) -> None:
    session = _dict("session.update.session", event["session"])
    if "type" in session:
        raise ProviderProtocolError(
            "session.update: xAI sessions have no 'type' (that is OpenAI GA)"
        )
    _keys("session.update.session", session, frozenset(), _SESSION)
    if "voice" in session and not isinstance(session["voice"], str):
        raise ProviderProtocolError("session.voice must be a string")
    turn_detection = session.get("turn_detection")
    if turn_detection is not None:
        td = _dict("session.turn_detection", turn_detection)
        _keys("session.turn_detection", td, frozenset({"type"}), _TURN_DETECTION)
        if td["type"] not in ("server_vad", None):
            raise ProviderProtocolError(
                "session.turn_detection.type must be 'server_vad' or null (push-to-talk)"
            )
    if "audio" in session:
        _audio(_dict("session.audio", session["audio"]))
    for index, tool in enumerate(session.get("tools") or []):
        _tool(f"session.tools[{index}]", _dict(f"session.tools[{index}]", tool))


def _audio(audio: dict[str, Any]) -> None:
    _keys("session.audio", audio, frozenset(), frozenset({"input", "output"}))
    for side, extra in (("input", {"format", "transcription"}), ("output", {"format", "speed"})):
        if side not in audio:
            continue
        part = _dict(f"session.audio.{side}", audio[side])
        if "voice" in part or "turn_detection" in part:
            raise ProviderProtocolError(
                f"session.audio.{side}: voice and turn_detection sit at the session's top level"
            )
        _keys(f"session.audio.{side}", part, frozenset(), frozenset(extra))
        if "format" in part:
            _format(f"session.audio.{side}.format", _dict(side, part["format"]))


def _format(where: str, fmt: dict[str, Any]) -> None:
    kind = fmt.get("type")
    if kind == "audio/pcm":
        _keys(where, fmt, frozenset({"type", "rate"}), frozenset())
        if fmt["rate"] not in _RATES:
            raise ProviderProtocolError(f"{where}.rate must be one of {sorted(_RATES)}")
    elif kind in ("audio/pcmu", "audio/pcma"):
        _keys(where, fmt, frozenset({"type"}), frozenset({"rate"}))
    else:
        raise ProviderProtocolError(f"{where}.type must be audio/pcm, audio/pcmu or audio/pcma")


def _tool(where: str, tool: dict[str, Any]) -> None:
    kind = tool.get("type")
    if kind not in _TOOL_KINDS:
        raise ProviderProtocolError(f"{where}.type must be one of {sorted(_TOOL_KINDS)}")
    if kind == "function":
        _keys(where, tool, frozenset({"type", "name"}), frozenset({"description", "parameters"}))
        if not isinstance(tool["name"], str) or not tool["name"]:
            raise ProviderProtocolError(f"{where}.name must be a non-empty string")


def _append(event: dict[str, Any]) -> None:
    if not isinstance(event["audio"], str):
        raise ProviderProtocolError("input_audio_buffer.append: audio must be base64 text")


def _item(event: dict[str, Any]) -> None:
    item = _dict("conversation.item.create.item", event["item"])
    kind = item.get("type")
    where = "conversation.item.create.item"
    if kind == "function_call_output":
        _keys(where, item, frozenset({"type", "call_id", "output"}), frozenset({"id"}))
        if not isinstance(item["output"], str):
            raise ProviderProtocolError(f"{where}.output must be a string")
    elif kind == "message":
        _keys(where, item, frozenset({"type", "role", "content"}), frozenset({"id"}))
        if item["role"] not in ("user", "assistant", "system"):
            raise ProviderProtocolError(f"{where}.role must be user, assistant or system")
        for part in item["content"]:
            part = _dict(f"{where}.content[]", part)
            if part.get("type") not in ("input_text", "input_audio", "text"):
                raise ProviderProtocolError(f"{where}.content[].type {part.get('type')!r}")
    else:
        raise ProviderProtocolError(f"{where}.type must be message or function_call_output")


def _response(event: dict[str, Any]) -> None:
    if "response" in event:
        body = _dict("response.create.response", event["response"])
        _keys("response.create.response", body, frozenset(), _RESPONSE)


_DEEP = {
    "session.update": _session,
    "input_audio_buffer.append": _append,
    "conversation.item.create": _item,
    "response.create": _response,
}
