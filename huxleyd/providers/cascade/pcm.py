"""PCM helpers for the cascade's stages: WAV in and out, one-shot resampling.

Layer: pure functions (numpy/scipy). Whole utterances, not the audio thread:
these allocate freely.
"""

from __future__ import annotations

import io
import struct
import wave
from math import gcd

import numpy as np

from huxleyd.errors import ProviderError

RATE_HZ = 24_000
"""The daemon's audio rate (DESIGN.md): PCM16 LE mono at 24 kHz."""


def duration_ms(pcm: bytes, rate_hz: int = RATE_HZ) -> float:
    return len(pcm) // 2 * 1000.0 / rate_hz


def resample(pcm: bytes, from_hz: int, to_hz: int) -> bytes:
    """PCM16 mono from ``from_hz`` to ``to_hz`` (polyphase, like the audio engine's)."""
    if from_hz == to_hz or not pcm:
        return pcm
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    divisor = gcd(from_hz, to_hz)
    from scipy.signal import resample_poly  # lazily: ~80 MB, rarely needed

    out = resample_poly(samples, to_hz // divisor, from_hz // divisor)
    clipped: bytes = np.clip(np.rint(out), -32768, 32767).astype("<i2").tobytes()
    return clipped


def wav_bytes(pcm: bytes, rate_hz: int) -> bytes:
    """A mono 16-bit WAV file holding ``pcm``."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate_hz)
        wav.writeframes(pcm)
    return out.getvalue()


def parse_wav(data: bytes, *, what: str = "the TTS command") -> tuple[int, bytes]:
    """``(rate_hz, pcm)`` of a mono 16-bit WAV.

    Streaming writers (espeak-ng ``--stdout``) leave placeholder sizes in the
    header, so the data chunk runs to the end of ``data``. Raises
    :class:`~huxleyd.errors.ProviderError` naming ``what`` otherwise.
    """
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ProviderError(f"{what} did not write a WAV file (got {data[:12]!r})")
    offset, rate_hz = 12, 0
    while offset + 8 <= len(data):
        chunk_id = data[offset : offset + 4]
        (size,) = struct.unpack_from("<I", data, offset + 4)
        body = offset + 8
        if chunk_id == b"fmt ":
            _, channels, rate_hz, _, _, bits = struct.unpack_from("<HHIIHH", data, body)
            if channels != 1 or bits != 16:
                raise ProviderError(
                    f"{what} wrote {channels} channel(s) of {bits} bits; expected mono 16-bit"
                )
        elif chunk_id == b"data":
            if not rate_hz:
                raise ProviderError(f"{what} wrote WAV data before its format")
            pcm = data[body:]
            return rate_hz, pcm[: len(pcm) // 2 * 2]
        offset = body + size + (size & 1)
    raise ProviderError(f"{what} wrote a WAV file without a data chunk")
