"""Speech recognition for the cascade: the committed push-to-talk audio → text.

Layer: adapters. :class:`OpenAITranscriber` sends one WAV to an
OpenAI-compatible ``/audio/transcriptions`` endpoint through the official
client; :class:`CommandTranscriber` runs a local recogniser (whisper.cpp's
``whisper-cli``, or anything that reads a WAV file and prints the text).
Both take PCM16 mono at the daemon's rate and raise
:class:`~huxleyd.errors.ProviderError` (chained) when recognition fails;
cancelling the call aborts the request or kills the program.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import openai
from openai import AsyncOpenAI

from huxleyd.errors import ProviderError
from huxleyd.pcm import resample_pcm16, wav_bytes


class Transcriber(Protocol):
    """Turns one utterance into text ("" when nothing was said)."""

    async def transcribe(self, pcm: bytes, rate_hz: int) -> str: ...


class OpenAITranscriber:
    """``client.audio.transcriptions.create`` with the utterance as a WAV file.

    ``model`` is ``gpt-transcribe``, ``gpt-4o-mini-transcribe``, ``gpt-4o-transcribe`` or
    ``whisper-1``; ``language`` an optional ISO-639-1 hint.
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str = "gpt-transcribe",
        language: str | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        self._client = client
        self._model = model
        self._language = language
        self._timeout_s = timeout_s

    async def transcribe(self, pcm: bytes, rate_hz: int) -> str:
        try:
            if self._language:
                result = await self._client.audio.transcriptions.create(
                    model=self._model,
                    file=("speech.wav", wav_bytes(pcm, rate_hz), "audio/wav"),
                    language=self._language,
                    timeout=self._timeout_s,
                )
            else:
                result = await self._client.audio.transcriptions.create(
                    model=self._model,
                    file=("speech.wav", wav_bytes(pcm, rate_hz), "audio/wav"),
                    timeout=self._timeout_s,
                )
        except openai.OpenAIError as exc:
            raise ProviderError(f"transcription with {self._model} failed: {exc}") from exc
        return result.text.strip()


class CommandTranscriber:
    """A local recogniser: ``argv`` with ``{wav}`` replaced by a temporary WAV file.

    The audio is resampled to ``rate_hz`` first (whisper.cpp wants 16 kHz).
    Without ``{wav}`` in ``argv`` the WAV goes to the program's standard
    input. Standard output, whitespace collapsed, is the transcript.
    """

    def __init__(self, argv: Sequence[str], *, rate_hz: int = 16_000, timeout_s: float = 15.0):
        if not argv:
            raise ValueError("the recogniser command is empty")
        self._argv = list(argv)
        self._rate_hz = rate_hz
        self._timeout_s = timeout_s

    async def transcribe(self, pcm: bytes, rate_hz: int) -> str:
        wav = wav_bytes(resample_pcm16(pcm, rate_hz, self._rate_hz), self._rate_hz)
        with tempfile.TemporaryDirectory(prefix="huxleyd-asr-") as tmp:
            path = Path(tmp) / "speech.wav"
            path.write_bytes(wav)
            uses_file = any("{wav}" in arg for arg in self._argv)
            argv = [arg.replace("{wav}", str(path)) for arg in self._argv]
            out = await run_command(
                argv, None if uses_file else wav, timeout_s=self._timeout_s, what="recogniser"
            )
        return " ".join(out.decode("utf-8", errors="replace").split())


async def run_command(
    argv: Sequence[str], stdin: bytes | None, *, timeout_s: float, what: str
) -> bytes:
    """Run ``argv``, feed ``stdin``, return its standard output.

    Raises ProviderError naming ``what`` when it cannot start, fails or
    times out; on cancellation the program is killed before re-raising.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise ProviderError(f"cannot start the {what} {argv[0]!r}: {exc.strerror}") from exc
    try:
        async with asyncio.timeout(timeout_s):
            out, err = await proc.communicate(stdin)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        if isinstance(exc, TimeoutError):
            raise ProviderError(f"the {what} {argv[0]!r} took more than {timeout_s} s") from exc
        raise
    if proc.returncode != 0:
        detail = err.decode("utf-8", errors="replace").strip()[-300:]
        raise ProviderError(f"the {what} {argv[0]!r} exited with {proc.returncode}: {detail}")
    return out
