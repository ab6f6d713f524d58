"""The strict GA validator: a real tagged union plus a walk for unknown keys."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.realtime import (
    ConversationItemTruncateEvent,
    InputAudioBufferAppendEvent,
    ResponseAudioDeltaEvent,
    SessionUpdateEvent,
)

from huxleyd.errors import ProviderProtocolError
from huxleyd.sim.validate import unknown_fields, validate_client_event, validate_server_event

GA_SESSION_UPDATE: dict[str, Any] = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "output_modalities": ["audio"],
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None},
            "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin"},
        },
        "tools": [{"type": "function", "name": "t", "parameters": {"anything": {"goes": 1}}}],
    },
}


def test_good_ga_events_come_back_typed() -> None:
    assert isinstance(validate_client_event(GA_SESSION_UPDATE), SessionUpdateEvent)
    append = validate_client_event('{"type": "input_audio_buffer.append", "audio": "AAA="}')
    assert isinstance(append, InputAudioBufferAppendEvent)
    truncate = validate_client_event(
        {
            "type": "conversation.item.truncate",
            "item_id": "i",
            "content_index": 0,
            "audio_end_ms": 5,
        }
    )
    assert isinstance(truncate, ConversationItemTruncateEvent)


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        # beta: no session.type, beta field names
        (
            {"type": "session.update", "session": {"modalities": ["audio"], "voice": "alloy"}},
            "type: Field required",
        ),
        # GA shape with beta keys: pydantic keeps them as extras; the walk catches them
        (
            {
                "type": "session.update",
                "session": {"type": "realtime", "input_audio_format": "pcm16"},
            },
            "unknown fields $.session.input_audio_format",
        ),
        (
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "audio": {"input": {"turn_detection": None, "vad": 1}},
                },
            },
            "unknown fields $.session.audio.input.vad",
        ),
        # a misspelled key at the top
        ({"type": "input_audio_buffer.append", "audio": "AAA=", "audoi": "x"}, "$.audoi"),
        # GA PCM is 24 kHz only
        (
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}},
                },
            },
            "Input should be 24000",
        ),
        # truncate needs all three fields
        (
            {"type": "conversation.item.truncate", "item_id": "i", "content_index": 0},
            "audio_end_ms: Field required",
        ),
        # a beta event name, and a server event sent by a client
        (
            {"type": "response.audio.delta", "delta": "AAA="},
            "does not match any of the expected tags",
        ),
        ({"type": "session.updated", "session": {}}, "does not match any of the expected tags"),
        # beta assistant content type "audio" (GA: "output_audio")
        (
            {
                "type": "conversation.item.create",
                "item": {"type": "message", "role": "assistant", "content": [{"type": "audio"}]},
            },
            "conversation.item.create",
        ),
    ],
)
def test_beta_style_and_unknown_fields_are_refused(event: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProviderProtocolError) as caught:
        validate_client_event(event)
    assert problem in str(caught.value)
    assert "invalid client event" in str(caught.value)


def test_not_json_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ProviderProtocolError, match=r"invalid client event \(not JSON\)"):
        validate_client_event("{oops")


def test_server_events_are_checked_the_same_way() -> None:
    delta = {
        "type": "response.output_audio.delta",
        "event_id": "e1",
        "response_id": "r",
        "item_id": "i",
        "output_index": 0,
        "content_index": 0,
        "delta": "AAA=",
    }
    assert isinstance(validate_server_event(delta), ResponseAudioDeltaEvent)
    with pytest.raises(ProviderProtocolError, match="event_id: Field required"):
        validate_server_event({k: v for k, v in delta.items() if k != "event_id"})
    with pytest.raises(ProviderProtocolError, match=r"unknown fields \$.extra"):
        validate_server_event({**delta, "extra": 1})
    with pytest.raises(ProviderProtocolError, match="does not match"):
        validate_server_event({**delta, "type": "response.audio.delta"})


def test_unknown_fields_are_found_inside_lists() -> None:
    bad = {
        "type": "session.update",
        "session": {
            "type": "realtime",
            "tools": [{"type": "function", "name": "t", "strict": True}],
        },
    }
    with pytest.raises(ProviderProtocolError, match=r"\$\.session\.tools\[0\]\.strict"):
        validate_client_event(bad)
    assert unknown_fields(validate_client_event(GA_SESSION_UPDATE)) == []
