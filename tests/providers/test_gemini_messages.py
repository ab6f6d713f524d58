"""The Gemini Live messages the wire helpers build pass ``google-genai``'s own
``LiveClientMessage``; fields are read in either spelling; the close codes
that report an error are told from the ones that only end a session."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from huxleyd.errors import ProviderProtocolError
from huxleyd.providers import gemini_wire as wire
from huxleyd.sim.gemini_validate import HAVE_GENAI, validate_gemini_client_message

TOOLS: list[dict[str, Any]] = [
    {"name": "get_time", "description": "The time."},
    {"name": "set_volume", "parameters": {"type": "object", "additionalProperties": False}},
]


def checked(message: str | dict[str, Any]) -> dict[str, Any]:
    """The message's body, once ``LiveClientMessage`` took it."""
    frame = message if isinstance(message, str) else json.dumps(message)
    key, parsed = validate_gemini_client_message(frame)
    body: dict[str, Any] = parsed[key]
    return body


def test_the_genai_types_are_what_checks() -> None:
    assert HAVE_GENAI  # the test extra: not the structural fallback


def test_the_setup_is_push_to_talk_with_transcripts_and_compression() -> None:
    declarations = wire.function_declarations(TOOLS)
    setup = checked(
        wire.setup_message(
            model="gemini-live-2.5",
            instructions="Be brief.",
            declarations=declarations,
            voice="Puck",
            handle=None,
            compression_trigger_tokens=20_000,
        )
    )
    assert setup["model"] == "models/gemini-live-2.5"
    assert setup["realtimeInputConfig"] == {"automaticActivityDetection": {"disabled": True}}
    assert setup["contextWindowCompression"] == {"slidingWindow": {}, "triggerTokens": 20_000}
    assert setup["sessionResumption"] == {}  # on, so the server hands out handles
    assert setup["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    tools = setup["tools"]
    assert isinstance(tools, list)
    assert [d["name"] for d in tools[0]["functionDeclarations"]] == ["get_time", "set_volume"]
    assert all(d["behavior"] == "BLOCKING" for d in declarations)
    assert "parametersJsonSchema" in declarations[1] and "parameters" not in declarations[1]


def test_a_resumed_setup_carries_its_handle_and_no_empty_parts() -> None:
    setup = checked(
        wire.setup_message(
            model="models/m", instructions="", declarations=[], voice="Puck", handle="h-1"
        )
    )
    assert setup["model"] == "models/m" and setup["sessionResumption"] == {"handle": "h-1"}
    assert "systemInstruction" not in setup and "tools" not in setup
    assert setup["contextWindowCompression"] == {"slidingWindow": {}}


def test_audio_activity_text_and_tool_answers_are_official() -> None:
    pcm = bytes(range(200))
    audio = checked(wire.audio_message(pcm))["audio"]
    assert isinstance(audio, dict) and audio["mimeType"] == "audio/pcm;rate=16000"
    assert base64.b64decode(str(audio["data"])) == pcm
    assert checked(wire.activity_message("activityStart")) == {"activityStart": {}}
    assert checked(wire.activity_message("activityEnd")) == {"activityEnd": {}}
    assert checked(wire.client_content(["hi", "there"])) == {
        "turnComplete": True,
        "turns": [{"role": "user", "parts": [{"text": "hi"}, {"text": "there"}]}],
    }
    assert checked(wire.client_content([], turn_complete=False)) == {"turnComplete": False}


def test_a_tool_answer_is_always_an_object() -> None:
    def response(output: str) -> object:
        answer = checked(wire.tool_response("c1", "get_time", output))
        calls = answer["functionResponses"]
        assert isinstance(calls, list) and calls[0]["id"] == "c1"
        return calls[0]["response"]

    assert response('{"time": "10:00"}') == {"time": "10:00"}
    assert response("[1, 2]") == {"output": [1, 2]}
    assert response("plain text") == {"output": "plain text"}


def test_declarations_need_unique_names() -> None:
    with pytest.raises(ValueError, match="non-empty 'name'"):
        wire.function_declarations([{"name": ""}])
    with pytest.raises(ValueError, match="duplicate tool names: get_time"):
        wire.function_declarations([*TOOLS, {"name": "get_time"}])


def test_fields_are_read_in_either_spelling() -> None:
    assert wire.get({"turnComplete": True}, "turnComplete") is True
    assert wire.get({"turn_complete": True}, "turnComplete") is True
    assert wire.get(None, "turnComplete") is None
    assert wire.get_list({"function_calls": [1]}, "functionCalls") == [1]
    assert wire.get_list({}, "functionCalls") == []
    with pytest.raises(ProviderProtocolError, match="'serverContent' must be an object, got list"):
        wire.get_dict({"server_content": []}, "serverContent")
    with pytest.raises(ProviderProtocolError, match="'functionCalls' must be a list, got dict"):
        wire.get_list({"functionCalls": {}}, "functionCalls")


def test_data_and_durations() -> None:
    assert wire.decode_b64(base64.b64encode(b"ab").decode(), "x") == b"ab"
    with pytest.raises(ProviderProtocolError, match="inlineData: data is not base64"):
        wire.decode_b64("YWI=!", "inlineData")
    with pytest.raises(ProviderProtocolError, match="inlineData: data must be base64 text"):
        wire.decode_b64(None, "inlineData")
    assert wire.parse_duration_s("1.5s") == 1.5
    assert wire.parse_duration_s("10") is None and wire.parse_duration_s("xs") is None


@pytest.mark.parametrize(
    ("code", "error", "name"),
    [
        (1000, False, "normal_closure"),
        (1006, False, "close_1006"),
        (None, False, "no_close_frame"),
        (1007, True, "invalid_argument"),
        (1011, True, "internal_error"),
        (4000, True, "close_4000"),
    ],
)
def test_close_codes(code: int | None, error: bool, name: str) -> None:
    assert wire.is_error_close(code) is error
    assert wire.close_code_name(code) == name
