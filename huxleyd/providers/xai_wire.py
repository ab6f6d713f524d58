"""xAI voice agent (``wss://api.x.ai/v1/realtime``) wire shapes.

Layer: pure functions and constants, no state. The xAI dialect uses the
OpenAI GA event names (field access and tool conversion come from
:mod:`openai_wire`) with these differences (from the reference notes:
docs.x.ai excerpts and third-party integrations, not a typed SDK):

- the first server events are ``session.created`` (flat) then ``conversation.created``;
- the session is flat: ``voice``, ``turn_detection`` and ``instructions``
  sit at the top level of ``session``, there is no ``session.type``, and the
  audio formats are ``audio.input.format`` / ``audio.output.format``;
- we send no ``conversation.item.truncate`` (and do not rely on
  ``response.cancel``): barge-in is a local cut, and the model hears what
  was heard as a context note. xAI's guide (docs.x.ai/docs/guides/voice/agent)
  does not list truncate; a third-party client cites xAI's machine-readable
  reference (docs.x.ai/voice-realtime.ws.json) as listing it, while an
  AsyncAPI transcription of the docs leaves it out. Until xAI's own page
  settles it, the note works either way (docs/providers.md);
- the text stream is ``response.text.delta``/``.done``, or under its GA name
  ``response.output_text.*`` (xAI calls them the same; both are handled);
  the server pings with ``{"type": "ping"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from huxleyd.pcm import RATE_HZ
from huxleyd.providers.openai_wire import SessionConfig

# The daemon's 24 kHz both ways (xAI's default; it accepts 8–48 kHz).
PCM_FORMAT: dict[str, Any] = {"type": "audio/pcm", "rate": RATE_HZ}

IGNORED_EVENTS = frozenset(
    {
        "ping",
        "conversation.item.added",
        "conversation.item.created",
        "input_audio_buffer.cleared",
        "input_audio_buffer.speech_stopped",
        "response.output_item.added",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_audio.done",
        "response.function_call_arguments.delta",
    }
)
"""Server events the core understands and deliberately does nothing with."""


def full_session(config: SessionConfig) -> dict[str, Any]:
    """The whole flat session for push-to-talk: no turn detection, PCM 24 kHz both ways."""
    return {
        "instructions": config.instructions,
        "voice": config.voice,
        # Push-to-talk: a type of null, not a null object. xAI's session
        # parameters table gives ``turn_detection.type`` null for manual turns
        # (as cited by a third-party client of its reference; docs/providers.md).
        "turn_detection": {"type": None},
        "audio": {
            "input": {"format": dict(PCM_FORMAT)},
            "output": {"format": dict(PCM_FORMAT)},
        },
        "tools": config.tools,
    }


def changed_session(config: SessionConfig, changed: Mapping[str, bool]) -> dict[str, Any] | None:
    """Only the top-level keys whose ``changed`` flag is set; None when nothing changed."""
    values: dict[str, Any] = {
        "instructions": config.instructions,
        "tools": config.tools,
        "voice": config.voice,
    }
    session = {key: value for key, value in values.items() if changed.get(key)}
    return session or None
