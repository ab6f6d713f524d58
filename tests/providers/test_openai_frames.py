"""The OpenAI GA frames the wire helpers build are what the official
``openai`` types accept, and a malformed server field is an error that names
the event and the key."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from openai.types.realtime import InputAudioBufferAppendEvent, SessionUpdateEvent

from huxleyd.errors import ProviderProtocolError
from huxleyd.providers import openai_wire as wire
from huxleyd.sim.validate import validate_client_event

TOOLS: list[dict[str, Any]] = [
    {"name": "get_time", "description": "The time."},
    {"name": "set_volume", "parameters": {"type": "object", "properties": {"level": {}}}},
]
CONFIG = wire.SessionConfig("Be brief.", wire.function_tools(TOOLS), "marin")


def session_update(session: dict[str, Any]) -> Any:
    return validate_client_event(
        json.dumps({"type": "session.update", "event_id": "e1", "session": session})
    )


def test_the_append_frame_is_exact_json_and_official() -> None:
    pcm = bytes(range(256)) * 4
    text = wire.append_frame(pcm)
    event = validate_client_event(text)
    assert isinstance(event, InputAudioBufferAppendEvent)
    assert base64.b64decode(event.audio) == pcm
    assert json.loads(text) == {"type": "input_audio_buffer.append", "audio": event.audio}


def test_the_full_session_is_official_ptt_at_24_khz() -> None:
    event = session_update(wire.full_session(CONFIG, transcription_model="gpt-4o-transcribe"))
    assert isinstance(event, SessionUpdateEvent)
    session: dict[str, Any] = event.session.model_dump(mode="json")  # as the types read it
    assert session["type"] == "realtime" and session["instructions"] == "Be brief."
    audio = session["audio"]
    assert audio["input"]["turn_detection"] is None  # push-to-talk: the button ends turns
    assert audio["input"]["format"]["rate"] == 24_000 == audio["output"]["format"]["rate"]
    assert audio["input"]["transcription"]["model"] == "gpt-4o-transcribe"
    assert [t["name"] for t in session["tools"]] == ["get_time", "set_volume"]
    bare = wire.full_session(CONFIG, transcription_model=None)
    assert "transcription" not in bare["audio"]["input"]
    session_update(bare)


def test_a_changed_session_carries_only_what_changed() -> None:
    assert wire.changed_session(CONFIG, {}) is None
    voice_only = wire.changed_session(CONFIG, {"voice": True})
    assert voice_only == {"type": "realtime", "audio": {"output": {"voice": "marin"}}}
    both = wire.changed_session(CONFIG, {"instructions": True, "tools": True})
    assert both is not None and set(both) == {"type", "instructions", "tools"}
    for session in (voice_only, both):
        assert session is not None
        session_update(session)


def test_digests_change_with_their_part_only() -> None:
    other = wire.SessionConfig("Be brief.", CONFIG.tools, "cedar")
    before, after = CONFIG.digests(), other.digests()
    assert [k for k in before if before[k] != after[k]] == ["voice"]
    assert wire.digest({"a": 1, "b": 2}) == wire.digest({"b": 2, "a": 1})


def test_tool_declarations_need_a_name_and_a_unique_one() -> None:
    assert wire.function_tool({"name": "x"})["parameters"] == {"type": "object", "properties": {}}
    with pytest.raises(ValueError, match="non-empty 'name'"):
        wire.function_tool({"description": "no name"})
    with pytest.raises(ValueError, match="duplicate tool names: get_time"):
        wire.function_tools([*TOOLS, {"name": "get_time"}])


def test_bad_fields_name_the_event_and_the_key() -> None:
    event = {"type": "response.output_audio.delta", "delta": 5, "n": True, "body": []}
    with pytest.raises(
        ProviderProtocolError, match=r"delta: field 'delta' must be a string, got int"
    ):
        wire.require_str(event, "delta")
    with pytest.raises(ProviderProtocolError, match="field 'n' must be an integer, got bool"):
        wire.require_int(event, "n")
    with pytest.raises(ProviderProtocolError, match="field 'body' must be an object, got list"):
        wire.require_dict(event, "body")
    with pytest.raises(
        ProviderProtocolError, match="field 'missing' must be a string, got nothing"
    ):
        wire.require_str(event, "missing")
    assert wire.optional_str(event, "delta") is None and wire.optional_str(None, "x") is None


def test_audio_must_be_strict_base64() -> None:
    good = {"type": "response.output_audio.delta", "delta": base64.b64encode(b"\1\2").decode()}
    assert wire.decode_audio(good) == b"\1\2"
    with pytest.raises(ProviderProtocolError, match="'delta' is not base64"):
        wire.decode_audio({"type": "response.output_audio.delta", "delta": "AQI=x"})


def test_a_frame_needs_a_string_type_and_an_early_end_says_why() -> None:
    assert wire.parse_frame(b'{"type":"ping"}') == {"type": "ping"}
    with pytest.raises(ProviderProtocolError, match="frame has no string 'type'"):
        wire.parse_frame('{"type": 3}')
    assert wire.response_reason({"status_details": {"reason": "turn_detected"}}) == "turn_detected"
    error = {"status_details": {"error": {"code": "rate_limit_exceeded"}}}
    assert wire.response_reason(error) == "rate_limit_exceeded"
    assert wire.response_reason({"status_details": None}) is None
