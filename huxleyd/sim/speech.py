"""Speech for the simulator: text → PCM16 LE mono 24 kHz.

Layer: adapter (runs ``espeak-ng``). With espeak-ng installed the sim's
replies are intelligible robot speech; without it, each word becomes a short
tone so the audio still has a length and a shape. Either way it is a
simulator talking, not an AI.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import subprocess
from typing import Literal

import numpy as np

from huxleyd.logs import get_logger
from huxleyd.pcm import BYTES_PER_MS, RATE_HZ, parse_wav, resample
from huxleyd.sim.scenario import ResponseSpec

SynthMode = Literal["auto", "espeak", "tone"]

_log = get_logger("huxleyd.sim")


def tone(freq_hz: float, duration_ms: int, *, amplitude: float = 0.3) -> bytes:
    """A sine tone with 5 ms fades (no clicks), PCM16 at 24 kHz."""
    n = duration_ms * RATE_HZ // 1000
    t = np.arange(n, dtype=np.float64) / RATE_HZ
    wave = amplitude * np.sin(2 * np.pi * freq_hz * t)
    fade = min(n // 2, RATE_HZ * 5 // 1000)
    if fade:
        ramp = np.linspace(0.0, 1.0, fade)
        wave[:fade] *= ramp
        wave[n - fade :] *= ramp[::-1]
    return _to_pcm16(wave)


def tone_speech(text: str) -> bytes:
    """Words as tones: 140 ms per word at a pitch from its letters, 60 ms gaps."""
    gap = bytes(60 * BYTES_PER_MS)
    parts: list[bytes] = []
    for word in text.split() or [""]:
        pitch = 300.0 + (sum(map(ord, word)) % 12) * 25.0
        parts.append(tone(pitch, 140))
        parts.append(gap)
    return b"".join(parts)


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


@functools.lru_cache(maxsize=64)
def espeak_speech(text: str, *, voice: str = "en") -> bytes:
    """``espeak-ng --stdout`` resampled to 24 kHz. Raises OSError if it fails, and
    :class:`~huxleyd.pcm.WavFormatError` (a ValueError) if it wrote no mono PCM16 WAV."""
    result = subprocess.run(
        ["espeak-ng", "--stdout", "-v", voice, "--", text],
        capture_output=True,
        check=False,
        timeout=30,
    )
    if result.returncode != 0:
        raise OSError(f"espeak-ng exited {result.returncode}: {result.stderr[:200]!r}")
    wav = parse_wav(result.stdout, what="the output of espeak-ng", channels=1)
    return resample(wav.mono(), wav.rate_hz, RATE_HZ).astype("<i2").tobytes()


def synthesize(text: str, mode: SynthMode = "auto") -> bytes:
    """Speech for ``text``: espeak-ng (``auto`` when installed) or word tones."""
    if mode == "tone" or (mode == "auto" and not espeak_available()):
        return tone_speech(text)
    try:
        return espeak_speech(text)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        if mode == "espeak":
            raise
        _log.warning("sim_espeak_failed", problem=str(exc), fallback="tones")
        return tone_speech(text)


def _to_pcm16(samples: np.ndarray) -> bytes:
    clipped = np.clip(samples, -1.0, 1.0) * 32767.0
    pcm: bytes = clipped.astype("<i2").tobytes()
    return pcm


async def response_speech(spec: ResponseSpec, mode: SynthMode) -> bytes:
    """A scripted response's audio: its pure tone when it has one, else its text
    synthesised (on a thread: espeak-ng takes a while)."""
    if spec.tone_hz is not None and spec.duration_ms is not None:
        return tone(spec.tone_hz, spec.duration_ms)
    return await asyncio.to_thread(synthesize, spec.say, mode)
