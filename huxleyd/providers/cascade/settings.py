"""Cascade settings (``[provider.cascade]`` in huxleyd.toml).

Three stages, each a remote service or a local program:

- ASR: OpenAI transcription at ``asr_url`` (``gpt-transcribe`` or
  ``whisper-1``), or ``asr_command`` (e.g. whisper.cpp) reading a WAV file;
- LLM: any OpenAI-compatible chat endpoint at ``llm_url`` (OpenAI, a
  llama.cpp server, Ollama's ``/v1``), with native tool calls when
  ``native_tools`` is true, else the code-prompt method;
- TTS: ElevenLabs stream-input at ``elevenlabs_url``, or ``tts_command``
  (espeak-ng, piper) reading the text on its standard input.

A small local model on a Pi 5, for example::

    [provider]
    kind = "cascade"

    [provider.cascade]
    llm_url = "http://127.0.0.1:8080/v1"      # llama-server
    llm_model = "qwen2.5-3b-instruct"
    native_tools = false
    include_args_doc = true
    asr = "command"
    asr_command = ["whisper-cli", "-m", "/opt/models/ggml-base.en.bin", "-nt", "-np", "-f", "{wav}"]
    tts = "command"
    tts_command = ["piper", "--model", "/opt/voices/en_US-amy-medium.onnx", "--output_raw"]
    tts_command_output = "raw"
    tts_command_rate_hz = 22050
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class CascadeSettings:
    """How the cascade provider hears, thinks and speaks."""

    # -------------------------------------------------------------- ASR
    asr: Literal["openai", "command"] = "openai"
    asr_url: str = "https://api.openai.com/v1"
    asr_model: str = "gpt-transcribe"
    """``gpt-transcribe`` (no announced shutdown), or ``gpt-4o-mini-transcribe``,
    ``gpt-4o-transcribe``, ``whisper-1`` (all shut down on 2027-02-26; see
    :mod:`huxleyd.providers.models`)."""
    asr_language: str | None = None
    """ISO-639-1 hint ("en", "de"); None lets the recogniser detect it."""
    asr_key_file: Path | None = None
    """None: the provider's key (``provider.key_file``)."""
    asr_command: tuple[str, ...] = ()
    """A local recogniser: argv with ``{wav}`` replaced by a WAV file path (mono PCM16 at
    ``asr_command_rate_hz``); it prints the transcript on standard output."""
    asr_command_rate_hz: int = field(default=16_000, metadata=bounds(8_000, 48_000))
    """whisper.cpp wants 16 kHz."""
    asr_timeout_s: float = field(default=15.0, metadata=bounds(1.0, 120.0))

    # -------------------------------------------------------------- LLM
    llm_url: str = "https://api.openai.com/v1"
    llm_model: str = "gpt-5.4-mini"
    llm_key_file: Path | None = None
    """None: the provider's key; with neither, a placeholder key is sent (local servers)."""
    native_tools: bool = True
    """The endpoint supports ``tools``/``tool_calls``; false: the code-prompt method."""
    include_args_doc: bool = True
    """Code prompt: describe each argument in the tool stubs (more tokens, better
    for small models)."""
    temperature: float | None = field(default=None, metadata=bounds(0.0, 2.0))
    max_output_tokens: int = field(default=400, metadata=bounds(16, 8192))
    """A limit suited to speech."""
    llm_timeout_s: float = field(default=30.0, metadata=bounds(1.0, 300.0))
    """The longest wait for the first or the next piece of a reply (a slow local model
    may take minutes in total; one that stops sending is given up on)."""
    max_repairs: int = field(default=1, metadata=bounds(0, 5))
    """Code prompt: how often a refused tool call goes back to the model, within one
    response, before the response ends without it."""
    max_history_messages: int = field(default=40, metadata=bounds(4, 1000))
    """Older messages are dropped (whole turns) so a small context window is not overrun."""
    http_max_retries: int = field(default=0, metadata=bounds(0, 5))
    """Retries of a failed ASR/LLM request; 0: fail fast, the user asks again."""

    # -------------------------------------------------------------- TTS
    tts: Literal["elevenlabs", "command"] = "elevenlabs"
    elevenlabs_url: str = "wss://api.elevenlabs.io"
    elevenlabs_model: str = "eleven_flash_v2_5"
    elevenlabs_voice_id: str = "21m00Tcm4TlvDq8ikWAM"
    elevenlabs_key_file: Path | None = None
    stability: float = field(default=0.5, metadata=bounds(0.0, 1.0))
    similarity_boost: float = field(default=0.8, metadata=bounds(0.0, 1.0))
    tts_command: tuple[str, ...] = ("espeak-ng", "--stdout", "--stdin")
    """A local synthesiser reading text on standard input and writing audio on standard
    output, once per sentence. ``{voice}`` in it is replaced by ``tts_voice``."""
    tts_voice: str = "en"
    tts_command_output: Literal["wav", "raw"] = "wav"
    """``wav`` (espeak-ng ``--stdout``) or ``raw`` PCM16 mono (piper ``--output_raw``)."""
    tts_command_rate_hz: int = field(default=22_050, metadata=bounds(8_000, 48_000))
    """The sample rate of ``raw`` output (piper's voice file says it)."""
    tts_timeout_s: float = field(default=20.0, metadata=bounds(1.0, 120.0))
    assumed_chars_per_s: float = field(default=15.0, metadata=bounds(5.0, 40.0))
    """Speaking rate used to place text in the audio when ElevenLabs sends no alignment."""

    # -------------------------------------------------------------- streaming
    min_chunk_chars: int = field(default=40, metadata=bounds(0, 1000))
    """After the first sentence, short sentences are merged up to this length."""
    max_sentence_chars: int = field(default=300, metadata=bounds(40, 2000))
    """A longer run-on sentence is split at a clause break."""
    audio_chunk_ms: int = field(default=100, metadata=bounds(10, 1000))
    """Size of the AudioChunk events handed to the coordinator."""
