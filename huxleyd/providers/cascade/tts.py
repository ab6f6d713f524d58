"""Speech synthesis for the cascade: sentence chunks in, PCM 24 kHz out.

Layer: adapters. A :class:`Synthesizer` reads speakable chunks from a queue
(``None`` ends the input) and hands back audio in play order together with
the text that audio voices — the provider needs that pairing to know what
a listener heard when cut off. Cancelling :meth:`Synthesizer.speak` aborts:
the websocket closes, the program is killed.

- :class:`ElevenLabsSynthesizer`: one stream-input websocket per response;
  each chunk is sent with ``flush`` (the chunks are whole sentences, so
  ElevenLabs never splits one), ``{"text": ""}`` ends it, audio comes back
  as ``pcm_24000`` until ``isFinal``. Text is paired with audio through the
  ``alignment`` of each message, or, when absent, at an assumed speaking rate.
- :class:`CommandSynthesizer`: a local program per chunk (espeak-ng, piper)
  reading the text on standard input, WAV or raw PCM out, resampled to 24 kHz.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol
from urllib.parse import quote, urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK, WebSocketException

from huxleyd.errors import ProviderError
from huxleyd.pcm import RATE_HZ, WavFormatError, bytes_to_ms, parse_wav, resample_pcm16
from huxleyd.providers.cascade.asr import run_command
from huxleyd.providers.transport import websocket_logger

TextQueue = asyncio.Queue[str | None]
OnAudio = Callable[[bytes, str], None]
"""Called with PCM16 mono 24 kHz and the text it voices, in play order."""


class Synthesizer(Protocol):
    async def speak(self, texts: TextQueue, on_audio: OnAudio) -> None:
        """Voice every chunk from ``texts`` until ``None``; return when all audio was handed out."""


class CommandSynthesizer:
    """Runs ``argv`` once per chunk, the chunk on its standard input.

    ``output`` is ``wav`` (espeak-ng ``--stdout``) or ``raw`` PCM16 mono at
    ``rate_hz`` (piper ``--output_raw``). ``{voice}`` in ``argv`` becomes
    ``voice``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        voice: str = "en",
        output: Literal["wav", "raw"] = "wav",
        rate_hz: int = 22_050,
        timeout_s: float = 20.0,
    ) -> None:
        if not argv:
            raise ValueError("the TTS command is empty")
        self._argv = [arg.replace("{voice}", voice) for arg in argv]
        self._output = output
        self._rate_hz = rate_hz
        self._timeout_s = timeout_s

    async def speak(self, texts: TextQueue, on_audio: OnAudio) -> None:
        while (text := await texts.get()) is not None:
            on_audio(await self.synthesize(text), text + " ")

    async def synthesize(self, text: str) -> bytes:
        """One chunk → PCM16 mono 24 kHz."""
        out = await run_command(
            self._argv, text.encode("utf-8"), timeout_s=self._timeout_s, what="TTS command"
        )
        if self._output == "wav":
            try:
                wav = parse_wav(
                    out, what=f"the output of the TTS command {self._argv[0]!r}", channels=1
                )
            except WavFormatError as exc:
                raise ProviderError(str(exc)) from exc
            rate_hz, pcm = wav.rate_hz, wav.samples.tobytes()
        else:
            rate_hz, pcm = self._rate_hz, out[: len(out) // 2 * 2]
        return resample_pcm16(pcm, rate_hz, RATE_HZ)


class ElevenLabsSynthesizer:
    """The ElevenLabs ``stream-input`` websocket, one connection per response."""

    def __init__(
        self,
        *,
        api_key: str | None,
        voice_id: str,
        model_id: str = "eleven_flash_v2_5",
        base_url: str = "wss://api.elevenlabs.io",
        stability: float = 0.5,
        similarity_boost: float = 0.8,
        assumed_chars_per_s: float = 15.0,
        open_timeout_s: float = 10.0,
        inactivity_timeout_s: int = 60,
    ) -> None:
        self._api_key = api_key
        # inactivity_timeout: a slow local model may pause between sentences longer
        # than ElevenLabs' default 20 s.
        self._url = (
            f"{base_url.rstrip('/')}/v1/text-to-speech/{quote(voice_id, safe='')}/stream-input"
            f"?model_id={quote(model_id, safe='')}&output_format=pcm_24000"
            f"&inactivity_timeout={inactivity_timeout_s}"
        )
        self._voice_settings = {"stability": stability, "similarity_boost": similarity_boost}
        self._chars_per_ms = assumed_chars_per_s / 1000.0
        self._open_timeout_s = open_timeout_s

    @property
    def url(self) -> str:
        return self._url

    async def speak(self, texts: TextQueue, on_audio: OnAudio) -> None:
        """Connects when the first chunk is ready (a model may think for long before
        it; a reply without words opens no stream at all)."""
        first = await texts.get()
        if first is None:
            return
        headers = {"xi-api-key": self._api_key} if self._api_key else {}
        loopback = (urlsplit(self._url).hostname or "") in {"127.0.0.1", "localhost", "::1"}
        try:
            async with connect(
                self._url,
                additional_headers=headers,
                open_timeout=self._open_timeout_s,
                close_timeout=1.0,
                proxy=None if loopback else True,
                user_agent_header="huxleyd",
                logger=websocket_logger(),
            ) as ws:
                await ws.send(json.dumps({"text": " ", "voice_settings": self._voice_settings}))
                sent: list[str] = []
                sender = asyncio.get_running_loop().create_task(self._send(ws, first, texts, sent))
                try:
                    await self._receive(ws, sent, on_audio)
                    await sender
                finally:
                    sender.cancel()
        except (OSError, WebSocketException, TimeoutError) as exc:
            raise ProviderError(f"ElevenLabs stream-input failed: {exc}") from exc

    async def _send(
        self, ws: ClientConnection, first: str, texts: TextQueue, sent: list[str]
    ) -> None:
        text: str | None = first
        while text is not None:
            chunk = text + " "  # ElevenLabs wants text to end with a space
            sent.append(chunk)
            await ws.send(json.dumps({"text": chunk, "flush": True}))
            text = await texts.get()
        await ws.send(json.dumps({"text": ""}))

    async def _receive(self, ws: ClientConnection, sent: list[str], on_audio: OnAudio) -> None:
        pending = _PendingText(sent, self._chars_per_ms)
        try:
            async for frame in ws:
                message = _decode(frame)
                if message.get("audio"):
                    pcm = base64.b64decode(message["audio"])
                    on_audio(pcm, pending.take(pcm, _aligned_text(message)))
                if message.get("isFinal"):
                    break
            else:
                raise ProviderError("ElevenLabs closed the stream before isFinal")
        except ConnectionClosedOK as exc:
            raise ProviderError("ElevenLabs closed the stream before isFinal") from exc
        rest = pending.rest()
        if rest:
            on_audio(b"", rest)


class _PendingText:
    """Pairs audio with the text sent: by alignment when given, else by speaking rate."""

    def __init__(self, sent: list[str], chars_per_ms: float) -> None:
        self._sent = sent
        self._chars_per_ms = chars_per_ms
        self._used = 0

    def _all(self) -> str:
        return "".join(self._sent)

    def take(self, pcm: bytes, aligned: str | None) -> str:
        whole = self._all()
        if aligned is not None:
            count = len(aligned)
        else:
            count = round(bytes_to_ms(len(pcm)) * self._chars_per_ms)
        text = whole[self._used : self._used + count]
        self._used += len(text)
        return aligned if aligned is not None else text

    def rest(self) -> str:
        whole = self._all()
        text, self._used = whole[self._used :], len(whole)
        return text if any(c.isalnum() for c in text) else ""


def _aligned_text(message: dict[str, Any]) -> str | None:
    alignment = message.get("alignment") or message.get("normalizedAlignment")
    if not isinstance(alignment, dict) or not isinstance(alignment.get("chars"), list):
        return None
    return "".join(str(c) for c in alignment["chars"])


def _decode(frame: str | bytes) -> dict[str, Any]:
    try:
        message = json.loads(frame)
    except ValueError as exc:
        raise ProviderError(f"ElevenLabs sent a frame that is not JSON: {frame[:80]!r}") from exc
    if not isinstance(message, dict):
        raise ProviderError(f"ElevenLabs sent {message!r}, not an object")
    if message.get("error") or (message.get("message") and "audio" not in message):
        raise ProviderError(f"ElevenLabs refused: {message.get('message') or message['error']}")
    return message
