"""The PCM vocabulary of huxleyd: every layer (audio, providers, cascade, sim,
turns) takes the rate, the byte arithmetic, WAV parsing and whole-buffer
resampling from here. (Skills use ``huxley_sdk``'s, which mirrors Huxley's.)

- the contract: PCM16 little-endian mono at :data:`RATE_HZ` (24 kHz,
  :data:`BYTES_PER_MS` = 48 bytes per millisecond); inside the engine audio
  is float32 in [-1, 1);
- conversions between samples, bytes and milliseconds at any rate
  (:func:`samples_to_ms`, :func:`ms_to_samples`, :func:`bytes_to_ms`,
  :func:`ms_to_bytes`);
- WAV: :func:`parse_wav` is the one parser (files, ``espeak-ng --stdout``
  with its placeholder sizes, uploads); :func:`read_wav`, :func:`write_wav`,
  :func:`wav_bytes` around it;
- :func:`resample` / :func:`resample_pcm16`: whole buffers at once (a TTS
  utterance, a mic WAV), scipy's polyphase filter, loaded lazily. The audio
  thread's streaming resampler is :mod:`huxleyd.audio.resample`.

Pure functions; no I/O except :func:`read_wav` and :func:`write_wav`.
"""

from __future__ import annotations

import io
import math
import struct
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
BYTES_PER_MS = RATE_HZ * SAMPLE_BYTES // 1000
"""48: bytes of one millisecond of mono PCM16 at :data:`RATE_HZ`."""
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


def bytes_to_ms(nbytes: int, rate_hz: int = RATE_HZ) -> float:
    """Milliseconds in ``nbytes`` of mono PCM16 at ``rate_hz`` (a trailing odd byte ignored)."""
    return (nbytes // SAMPLE_BYTES) * 1000.0 / rate_hz


def ms_to_bytes(ms: int, rate_hz: int = RATE_HZ) -> int:
    """Bytes of ``ms`` milliseconds of mono PCM16 at ``rate_hz``: whole samples,
    rounded down, so the count is always even."""
    return (ms * rate_hz // 1000) * SAMPLE_BYTES


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


class WavFormatError(AudioError, ValueError):
    """Bytes that are not the PCM16 WAV expected (the message names whose bytes)."""


_PCM_FORMATS = (1, 0xFFFE)
"""WAVE_FORMAT_PCM and WAVE_FORMAT_EXTENSIBLE (whose subformat we take as PCM)."""


def parse_wav(data: bytes, *, what: str = "WAV data", channels: int | None = None) -> WavData:
    """The samples of a PCM16 WAV held in memory (any rate; ``channels`` if given).

    A data chunk whose size runs past the end is taken to the end of ``data``:
    streaming writers cannot go back to fill the size in and leave a large
    placeholder (``espeak-ng --stdout``, ffmpeg to a pipe). A partial last
    frame is dropped. Raises :class:`WavFormatError` naming
    ``what`` and what was wrong.
    """
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise WavFormatError(f"{what} is not a WAV file (it starts {data[:12]!r})")
    offset, fmt = 12, None
    while offset + 8 <= len(data):
        chunk_id = data[offset : offset + 4]
        (size,) = struct.unpack_from("<I", data, offset + 4)
        body = offset + 8
        if chunk_id == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise WavFormatError(f"{what}: a WAV format chunk of {size} bytes is too short")
            fmt = struct.unpack_from("<HHIIHH", data, body)
            tag, count, _, _, _, bits = fmt
            if tag not in _PCM_FORMATS or bits != SAMPLE_BYTES * 8:
                raise WavFormatError(
                    f"{what}: expected PCM16 (16-bit) samples, got {bits}-bit (format {tag})"
                )
            if count < 1 or (channels is not None and count != channels):
                wanted = "mono" if channels == 1 else f"{channels} channel(s)"
                raise WavFormatError(
                    f"{what}: {count} channel(s) of 16 bits; expected {wanted} 16-bit"
                )
        elif chunk_id == b"data":
            if fmt is None:
                raise WavFormatError(f"{what}: WAV data before its format")
            end = min(len(data), body + size)
            count, rate_hz = fmt[1], fmt[2]
            frame = SAMPLE_BYTES * count
            raw = data[body : body + (end - body) // frame * frame]
            samples = np.frombuffer(raw, dtype="<i2").astype(np.int16).reshape(-1, count)
            return WavData(samples=samples, rate_hz=rate_hz, channels=count)
        offset = body + size + (size & 1)
    raise WavFormatError(f"{what}: a WAV file without a data chunk")


def read_wav(path: Path) -> WavData:
    """Read a PCM16 WAV file; :class:`AudioError` naming the file otherwise."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AudioError(f"{path}: cannot read as a PCM WAV file: {exc}") from exc
    return parse_wav(data, what=str(path))


def write_wav(path: Path, samples: Int16Array, *, rate_hz: int = RATE_HZ) -> None:
    """Write int16 samples (1-D mono or ``(frames, channels)``) as a PCM16 WAV."""
    path.write_bytes(_wav_file(samples, rate_hz))


def wav_bytes(pcm: bytes, rate_hz: int = RATE_HZ) -> bytes:
    """A mono PCM16 WAV file holding ``pcm`` (for a recogniser's upload or stdin)."""
    return _wav_file(pcm16_view(pcm[: len(pcm) // 2 * 2]), rate_hz)


def _wav_file(samples: Int16Array, rate_hz: int) -> bytes:
    data = samples if samples.ndim == 2 else samples.reshape(-1, 1)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(data.shape[1])
        wav.setsampwidth(SAMPLE_BYTES)
        wav.setframerate(rate_hz)
        wav.writeframes(np.ascontiguousarray(data, dtype="<i2").tobytes())
    return out.getvalue()


def resample(samples: Int16Array, from_hz: int, to_hz: int) -> Int16Array:
    """A whole int16 buffer (1-D, or ``(frames, channels)`` along frames) from
    ``from_hz`` to ``to_hz``: polyphase (like the engine's), rounded and clipped.

    Allocates freely: for utterances and files, never the audio thread.
    """
    if from_hz == to_hz or samples.shape[0] == 0:
        return samples
    from scipy.signal import resample_poly  # lazily: ~80 MB, rarely needed

    divisor = math.gcd(from_hz, to_hz)
    out = resample_poly(samples.astype(np.float64), to_hz // divisor, from_hz // divisor, axis=0)
    resampled: Int16Array = np.clip(np.rint(out), -32768, 32767).astype(np.int16)
    return resampled


def resample_pcm16(pcm: bytes, from_hz: int, to_hz: int) -> bytes:
    """Mono PCM16 bytes from ``from_hz`` to ``to_hz`` (see :func:`resample`)."""
    if from_hz == to_hz or not pcm:
        return pcm
    return resample(pcm16_view(pcm[: len(pcm) // 2 * 2]), from_hz, to_hz).astype("<i2").tobytes()
