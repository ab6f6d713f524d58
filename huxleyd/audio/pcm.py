"""PCM constants, conversions and level maths shared by the audio layer.

Pure functions over numpy arrays; no I/O except :func:`read_wav` and
:func:`write_wav`, which the WAV backend, the earcon loader and tests use.
Inside the engine audio is float32 in [-1, 1); at every edge it is PCM16
little-endian (the project-wide contract: mono, 24 kHz, 48,000 bytes/s).
"""

from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from huxleyd.errors import AudioError

RATE_HZ = 24_000
"""The rate of every PCM stream between components (and of the mixer)."""
SAMPLE_BYTES = 2
"""PCM16: two bytes per sample."""
INT16_SCALE = 32768.0
"""float = int16 / INT16_SCALE; full scale is 1.0."""
SILENCE_DBFS = -120.0
"""What a level of exactly zero reports (instead of -inf)."""

_INT16_MIN = np.float32(-32768.0)
_INT16_MAX = np.float32(32767.0)

Int16Array = npt.NDArray[np.int16]
Float32Array = npt.NDArray[np.float32]


def samples_to_ms(samples: int, rate_hz: int = RATE_HZ) -> int:
    """Whole milliseconds in ``samples`` at ``rate_hz`` (rounded down)."""
    return (samples * 1000) // rate_hz


def ms_to_samples(ms: float, rate_hz: int = RATE_HZ) -> int:
    """Samples in ``ms`` at ``rate_hz``, rounded to the nearest sample."""
    return round(ms * rate_hz / 1000.0)


def period_frames(rate_hz: int, period_ms: int) -> int:
    """Frames in one period; the period must be a whole number of frames.

    Raises :class:`~huxleyd.errors.AudioError` otherwise, because a period
    that does not divide the rate would make every buffer size drift.
    """
    frames, rest = divmod(rate_hz * period_ms, 1000)
    if rest:
        raise AudioError(
            f"audio.period_ms = {period_ms} is not a whole number of frames at "
            f"{rate_hz} Hz; choose a period that is (20 ms works for 8-48 kHz except 11025 Hz)"
        )
    return frames


def pcm16_view(pcm: bytes | bytearray | memoryview, *, what: str = "PCM") -> Int16Array:
    """A read-only int16 view of little-endian PCM16 bytes (no copy)."""
    if len(pcm) % SAMPLE_BYTES:
        raise ValueError(f"{what}: PCM16 needs an even number of bytes, got {len(pcm)}")
    return np.frombuffer(pcm, dtype="<i2")


def to_float(samples: Int16Array) -> Float32Array:
    """int16 → float32 in [-1, 1) (allocates; not for the audio thread)."""
    return (samples.astype(np.float32)) / np.float32(INT16_SCALE)


def to_pcm16(samples: Float32Array) -> bytes:
    """float → PCM16 bytes with clipping (allocates; not for the audio thread)."""
    scaled = np.clip(np.round(samples * INT16_SCALE), -32768, 32767)
    return scaled.astype("<i2").tobytes()


def float_to_int16_into(src: Float32Array, dst: Int16Array, scratch: Float32Array) -> None:
    """float32 → int16 without allocating: scale, round, clip, cast into ``dst``."""
    np.multiply(src, np.float32(INT16_SCALE), out=scratch)
    np.rint(scratch, out=scratch)
    np.clip(scratch, _INT16_MIN, _INT16_MAX, out=scratch)  # float32 bounds: no cast buffer
    np.copyto(dst, scratch, casting="unsafe")


def amplitude_to_dbfs(amplitude: float) -> float:
    """Linear amplitude (1.0 = full scale) → dBFS, floored at :data:`SILENCE_DBFS`."""
    if amplitude <= 0.0:
        return SILENCE_DBFS
    return max(SILENCE_DBFS, 20.0 * math.log10(amplitude))


def db_to_gain(db: float) -> float:
    """Decibels → linear gain; ``-inf`` gives 0."""
    if db == -math.inf:
        return 0.0
    return math.pow(10.0, db / 20.0)


def rms(samples: npt.NDArray[np.floating] | Int16Array) -> float:
    """Root mean square of ``samples`` in their own units (allocates)."""
    if samples.size == 0:
        return 0.0
    data = samples.astype(np.float64)
    return float(np.sqrt(np.mean(data * data)))


@dataclass(frozen=True, slots=True)
class WavData:
    """A WAV file's samples as int16, shape ``(frames, channels)``."""

    samples: Int16Array
    rate_hz: int
    channels: int

    def mono(self, channel: int = 0) -> Int16Array:
        """One channel as a 1-D array."""
        return np.ascontiguousarray(self.samples[:, channel])

    @property
    def duration_s(self) -> float:
        return int(self.samples.shape[0]) / self.rate_hz


def read_wav(path: Path) -> WavData:
    """Read a PCM16 WAV file. Other sample widths are rejected by name."""
    try:
        with wave.open(str(path), "rb") as wav:
            width = wav.getsampwidth()
            channels = wav.getnchannels()
            rate = wav.getframerate()
            raw = wav.readframes(wav.getnframes())
    except (OSError, wave.Error, EOFError) as exc:
        raise AudioError(f"{path}: cannot read as a PCM WAV file: {exc}") from exc
    if width != SAMPLE_BYTES:
        raise AudioError(f"{path}: expected PCM16 (16-bit) samples, got {width * 8}-bit")
    samples = np.frombuffer(raw, dtype="<i2").astype(np.int16).reshape(-1, channels)
    return WavData(samples=samples, rate_hz=rate, channels=channels)


def write_wav(path: Path, samples: Int16Array, *, rate_hz: int = RATE_HZ) -> None:
    """Write int16 samples (1-D mono or ``(frames, channels)``) as a PCM16 WAV."""
    data = samples if samples.ndim == 2 else samples.reshape(-1, 1)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(data.shape[1])
        wav.setsampwidth(SAMPLE_BYTES)
        wav.setframerate(rate_hz)
        wav.writeframes(np.ascontiguousarray(data, dtype="<i2").tobytes())
