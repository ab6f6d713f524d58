"""From ``[provider.cascade]`` settings to a :class:`CascadeConnection` (the daemon's one call).

Layer: wiring. Reads the key files, builds the official ``openai`` clients
for the recogniser and the chat model, and picks the TTS. A key missing
where a cloud service needs one fails here, at start, naming the setting.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from openai import AsyncOpenAI

from huxleyd.errors import ConfigError
from huxleyd.providers.apikey import read_api_key
from huxleyd.providers.base import ConnectionStatus
from huxleyd.providers.cascade.asr import CommandTranscriber, OpenAITranscriber, Transcriber
from huxleyd.providers.cascade.llm import ChatModel
from huxleyd.providers.cascade.provider import CascadeConnection
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.cascade.tts import CommandSynthesizer, ElevenLabsSynthesizer, Synthesizer
from huxleyd.providers.events import Event

NO_KEY = "no-key"
"""Sent to servers that need none (llama.cpp, Ollama): the client insists on a key,
and passing one stops it from reading ``OPENAI_API_KEY`` and leaking it to the LAN."""


def _needs_key(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host.endswith(("openai.com", "elevenlabs.io"))


def _key(path: Path | None, fallback: str | None, *, setting: str, url: str) -> str | None:
    key = read_api_key(path, key=setting) if path is not None else fallback
    if key is None and _needs_key(url):
        raise ConfigError("[provider.cascade]", setting, f"{url} needs an API key; set {setting}")
    return key


def _client(
    settings: CascadeSettings, url: str, key_file: Path | None, setting: str, api_key: str | None
) -> AsyncOpenAI:
    """An OpenAI-compatible client for one stage (recogniser or chat model)."""
    key = _key(key_file, api_key, setting=setting, url=url)
    return AsyncOpenAI(api_key=key or NO_KEY, base_url=url, max_retries=settings.http_max_retries)


def create_transcriber(settings: CascadeSettings, api_key: str | None) -> Transcriber:
    if settings.asr == "command":
        if not settings.asr_command:
            raise ConfigError(
                "[provider.cascade]", "asr_command", 'asr = "command" needs a command'
            )
        return CommandTranscriber(
            settings.asr_command,
            rate_hz=settings.asr_command_rate_hz,
            timeout_s=settings.asr_timeout_s,
        )
    return OpenAITranscriber(
        _client(settings, settings.asr_url, settings.asr_key_file, "asr_key_file", api_key),
        model=settings.asr_model,
        language=settings.asr_language,
        timeout_s=settings.asr_timeout_s,
    )


def create_chat_model(settings: CascadeSettings, api_key: str | None) -> ChatModel:
    return ChatModel(
        _client(settings, settings.llm_url, settings.llm_key_file, "llm_key_file", api_key),
        model=settings.llm_model,
        max_output_tokens=settings.max_output_tokens,
        temperature=settings.temperature,
        timeout_s=settings.llm_timeout_s,
    )


def create_synthesizer(settings: CascadeSettings) -> Synthesizer:
    if settings.tts == "command":
        if not settings.tts_command:
            raise ConfigError(
                "[provider.cascade]", "tts_command", 'tts = "command" needs a command'
            )
        return CommandSynthesizer(
            settings.tts_command,
            voice=settings.tts_voice,
            output=settings.tts_command_output,
            rate_hz=settings.tts_command_rate_hz,
            timeout_s=settings.tts_timeout_s,
        )
    key = _key(
        settings.elevenlabs_key_file,
        None,
        setting="elevenlabs_key_file",
        url=settings.elevenlabs_url.replace("wss://", "https://"),
    )
    return ElevenLabsSynthesizer(
        api_key=key,
        voice_id=settings.elevenlabs_voice_id,
        model_id=settings.elevenlabs_model,
        base_url=settings.elevenlabs_url,
        stability=settings.stability,
        similarity_boost=settings.similarity_boost,
        assumed_chars_per_s=settings.assumed_chars_per_s,
    )


def create_cascade_connection(
    settings: CascadeSettings,
    *,
    api_key: str | None,
    on_event: Callable[[Event], None],
    on_state: Callable[[ConnectionStatus], None] | None = None,
) -> CascadeConnection:
    """A :class:`CascadeConnection` for ``settings`` (not started: ``await conn.run()``).

    ``api_key`` is the provider's key (``provider.key_file``), used for the
    recogniser and the chat model unless their own key files are set.
    Raises :class:`~huxleyd.errors.ConfigError` when a cloud endpoint has no key
    or a command stage has no command.
    """
    return CascadeConnection(
        settings,
        transcriber=create_transcriber(settings, api_key),
        llm=create_chat_model(settings, api_key),
        synthesizer=create_synthesizer(settings),
        on_event=on_event,
        on_state=on_state,
        url=settings.llm_url,
    )


__all__ = [
    "create_cascade_connection",
    "create_chat_model",
    "create_synthesizer",
    "create_transcriber",
]
