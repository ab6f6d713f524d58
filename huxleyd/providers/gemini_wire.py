"""Gemini Live (BidiGenerateContent) wire shapes: client messages out, fields in.

Layer: pure functions, no state, no I/O. :mod:`gemini_core` keeps the
state. Every client message is a JSON object with exactly one top-level key
(``setup``, ``realtimeInput``, ``clientContent``, ``toolResponse``); we send
camelCase, and read either spelling, since proto-JSON allows both
(``turnComplete`` / ``turn_complete``). The server sends JSON in *binary*
frames, which :func:`huxleyd.providers.core.parse_json_object` reads as
readily as text.

Tools go out as ``functionDeclarations`` with ``parametersJsonSchema``: the
skills' parameters are plain JSON schemas, which Gemini's OpenAPI-subset
``parameters`` (upper-case types, no ``additionalProperties`` semantics)
would not take unchanged.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from huxleyd.errors import ProviderProtocolError
from huxleyd.pcm import RATE_HZ
from huxleyd.providers.core import dumps

INPUT_RATE_HZ = 16_000
"""Gemini Live hears 16 kHz PCM: the engine resamples the mic for it."""
OUTPUT_RATE_HZ = RATE_HZ
"""It answers at 24 kHz, the daemon's rate."""
INPUT_MIME = f"audio/pcm;rate={INPUT_RATE_HZ}"

_AUDIO_HEAD = '{"realtimeInput":{"audio":{"data":"'
_AUDIO_TAIL = f'","mimeType":"{INPUT_MIME}"}}}}}}'

CLOSE_CODE_NAMES = {
    1000: "normal_closure",
    1001: "going_away",
    1007: "invalid_argument",
    1008: "policy_violation",
    1011: "internal_error",
    1013: "try_again_later",
}
"""Gemini reports errors only as websocket close codes (there is no error message)."""

NOT_PROVIDER_ERRORS = frozenset({1000, 1001, 1005, 1006})
"""Normal closes, and the codes that only say no close frame came (a network drop)."""


def function_declarations(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Provider-neutral declarations (name, description, parameters) as Gemini's."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool declaration needs a non-empty 'name', got {tool!r}")
        # BLOCKING: the model waits for the tool's answer, as the turn layer
        # expects. gemini-3.8-live makes NON_BLOCKING the default (its model
        # page, "Migrating from Gemini 3.1 Flash Live"); earlier Live models
        # block by default, so saying it changes nothing there.
        declaration: dict[str, Any] = {"name": name, "behavior": "BLOCKING"}
        if tool.get("description") is not None:
            declaration["description"] = str(tool["description"])
        parameters = tool.get("parameters")
        if parameters is not None:
            declaration["parametersJsonSchema"] = dict(parameters)
        out.append(declaration)
    names = [d["name"] for d in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
    return out


def setup_message(
    *,
    model: str,
    instructions: str,
    declarations: list[dict[str, Any]],
    voice: str,
    handle: str | None,
    compression_trigger_tokens: int = 0,
) -> dict[str, Any]:
    """The ``setup`` for push-to-talk: audio out, our voice, VAD off, transcripts on.

    ``handle`` resumes an earlier session (its conversation goes on); None
    starts a new one. Either way session resumption is on, so the server
    sends handles to resume with next time.

    Context window compression (a sliding window) is always on: without it
    the Live API ends an audio session at 15 minutes, and resuming does not
    reset that limit. ``compression_trigger_tokens`` is the context size
    that starts a compression (0: the server's default).
    """
    compression: dict[str, Any] = {"slidingWindow": {}}
    if compression_trigger_tokens > 0:
        compression["triggerTokens"] = compression_trigger_tokens
    setup: dict[str, Any] = {
        "model": model if model.startswith("models/") else f"models/{model}",
        "generationConfig": {
            "responseModalities": ["AUDIO"],
            "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": voice}}},
        },
        "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
        "inputAudioTranscription": {},
        "outputAudioTranscription": {},
        "sessionResumption": {"handle": handle} if handle else {},
        "contextWindowCompression": compression,
    }
    if instructions:
        setup["systemInstruction"] = {"parts": [{"text": instructions}]}
    if declarations:
        setup["tools"] = [{"functionDeclarations": declarations}]
    return {"setup": setup}


def audio_message(pcm: bytes) -> str:
    """``realtimeInput.audio`` for 16 kHz PCM, built without json.dumps (hot path)."""
    return _AUDIO_HEAD + binascii.b2a_base64(pcm, newline=False).decode("ascii") + _AUDIO_TAIL


def activity_message(which: str) -> str:
    """``{"realtimeInput":{"activityStart":{}}}`` or ``activityEnd``."""
    return dumps({"realtimeInput": {which: {}}})


def client_content(texts: Sequence[str], *, turn_complete: bool = True) -> str:
    """A user turn of text (possibly none). Complete: the model answers it; not
    complete: it only joins the context."""
    content: dict[str, Any] = {"turnComplete": turn_complete}
    if texts:
        content["turns"] = [{"role": "user", "parts": [{"text": t} for t in texts]}]
    return dumps({"clientContent": content})


def tool_response(call_id: str, name: str, output: str) -> str:
    """``toolResponse`` for one call. ``response`` must be an object: non-objects are wrapped."""
    try:
        parsed: Any = json.loads(output)
    except ValueError:
        parsed = output
    response = parsed if isinstance(parsed, dict) else {"output": parsed}
    return dumps(
        {
            "toolResponse": {
                "functionResponses": [{"id": call_id, "name": name, "response": response}]
            }
        }
    )


# ---------------------------------------------------------------- reading


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def get(message: Mapping[str, Any] | None, key: str) -> Any:
    """``message[key]`` by its camelCase name or its snake_case one; None when absent."""
    if not message:
        return None
    if key in message:
        return message[key]
    return message.get(snake(key))


def get_dict(message: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    """An object field; a protocol error when present but not an object."""
    value = get(message, key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProviderProtocolError(f"field {key!r} must be an object, got {type(value).__name__}")
    return value


def get_list(message: Mapping[str, Any] | None, key: str) -> list[Any]:
    value = get(message, key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProviderProtocolError(f"field {key!r} must be a list, got {type(value).__name__}")
    return value


def decode_b64(data: object, where: str) -> bytes:
    if not isinstance(data, str):
        raise ProviderProtocolError(f"{where}: data must be base64 text")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except binascii.Error as exc:
        raise ProviderProtocolError(f"{where}: data is not base64 ({exc})") from exc


def parse_duration_s(text: object) -> float | None:
    """``"10s"`` / ``"1.5s"`` (proto Duration JSON) in seconds; None when unreadable."""
    if isinstance(text, str) and text.endswith("s"):
        try:
            return float(text[:-1])
        except ValueError:
            return None
    return None


def is_error_close(code: int | None) -> bool:
    """The server ended the session to report an error (1007, 1008, 1011…)."""
    return code is not None and code not in NOT_PROVIDER_ERRORS


def close_code_name(code: int | None) -> str:
    if code is None:
        return "no_close_frame"
    return CLOSE_CODE_NAMES.get(code, f"close_{code}")


CONTENT_USED = frozenset(
    {
        "model_turn",
        "turn_complete",
        "interrupted",
        "input_transcription",
        "output_transcription",
        "interaction_status",
        "generation_complete",
    }
)
"""``serverContent`` fields the core acts on; any other is logged as unused, once."""
