"""The earcon palette loader (Huxley's), plus huxleyd's PCM constants and converter.

Audio between skills and the runtime is PCM16 little-endian, mono, 24 kHz.
Huxley's SDK has only :func:`load_pcm_palette`; the constants,
:func:`read_palette`, :func:`read_wav_pcm16_24k_mono` and :func:`silence`
are huxleyd extensions.
"""

from __future__ import annotations

import wave
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SAMPLE_RATE = 24_000
"""Samples per second of all PCM a skill yields or receives."""
CHANNELS = 1
SAMPLE_WIDTH = 2
"""Bytes per sample (PCM16)."""
BYTES_PER_SECOND = SAMPLE_RATE * CHANNELS * SAMPLE_WIDTH
"""48,000: divide a byte count by this to get seconds."""


class PaletteError(ValueError):
    """A sound file could not be turned into PCM16 24 kHz mono."""


def _to_int16(raw: bytes, width: int) -> np.ndarray:
    import numpy as np

    if width == 2:
        return np.frombuffer(raw, dtype="<i2")
    if width == 1:  # unsigned 8-bit
        return ((np.frombuffer(raw, dtype=np.uint8).astype(np.int16) - 128) << 8).astype(np.int16)
    if width == 3:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        value = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        value = np.where(value & 0x800000, value - (1 << 24), value)
        return (value >> 8).astype(np.int16)
    if width == 4:
        return (np.frombuffer(raw, dtype="<i4") >> 16).astype(np.int16)
    raise PaletteError(f"unsupported sample width {width * 8} bits")


def read_wav_pcm16_24k_mono(path: Path) -> bytes:
    """Read a PCM WAV of any integer width, channel count and rate; convert it.

    Channels are averaged to mono and the rate resampled with a polyphase
    filter. Non-PCM WAVs (float, compressed) are rejected with a message
    naming the file, never mangled.
    """
    try:
        with wave.open(str(path), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            raw = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as exc:
        raise PaletteError(
            f"{path}: not a PCM WAV file ({exc}); expected PCM16 24 kHz mono "
            "(convert with: ffmpeg -i IN -ac 1 -ar 24000 -c:a pcm_s16le OUT.wav)"
        ) from exc
    # numpy (and scipy below) only here: importing huxley_sdk stays as light
    # as Huxley's, and only the converter needs them.
    import numpy as np

    try:
        samples = _to_int16(raw, width)
    except PaletteError as exc:
        raise PaletteError(f"{path}: {exc}; expected PCM16 24 kHz mono") from None
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1).astype(np.int16)
    if rate != SAMPLE_RATE:
        # Imported here: scipy.signal costs about a second at start-up on a
        # Pi, and most palettes are already 24 kHz.
        from scipy.signal import resample_poly

        gcd = np.gcd(rate, SAMPLE_RATE)
        floats = resample_poly(samples.astype(np.float32), SAMPLE_RATE // gcd, rate // gcd)
        samples = np.clip(np.round(floats), -32768, 32767).astype(np.int16)
    return samples.astype("<i2").tobytes()


def load_pcm_palette(directory: Path | str, roles: Iterable[str] | None = None) -> dict[str, bytes]:
    """``{role: pcm}`` from ``<directory>/<role>.wav``, Huxley's way: lenient.

    Only files already in PCM16 24 kHz mono are loaded (the header is
    parsed, so LIST chunks are fine). A missing directory, a missing file,
    an unreadable file or one in another format is skipped without a
    word: the skill decides what a partial palette means. ``roles=None``
    (a huxleyd extension) takes every ``*.wav`` of the directory.

    To convert other formats, or fail naming the bad file, use
    :func:`read_palette`.
    """
    folder = Path(directory)
    if not folder.is_dir():
        return {}
    wanted = list(roles) if roles is not None else [p.stem for p in sorted(folder.glob("*.wav"))]
    palette: dict[str, bytes] = {}
    for role in wanted:
        try:
            with wave.open(str(folder / f"{role}.wav"), "rb") as wav:
                shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
                if shape != (CHANNELS, SAMPLE_WIDTH, SAMPLE_RATE):
                    continue
                palette[role] = wav.readframes(wav.getnframes())
        except (wave.Error, EOFError, OSError):
            continue
    return palette


def read_palette(directory: Path | str, roles: Iterable[str] | None = None) -> dict[str, bytes]:
    """Like :func:`load_pcm_palette` but strict and converting (a huxleyd extension).

    Every ``*.wav`` of ``directory`` (or only ``roles``) becomes PCM16
    24 kHz mono, whatever its integer format, rate or channel count. A
    missing directory or role, or a file that is not a PCM WAV, raises
    :class:`PaletteError` naming it.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise PaletteError(f"{folder}: sound directory not found")
    files = {p.stem: p for p in sorted(folder.glob("*.wav"))}
    wanted = list(roles) if roles is not None else list(files)
    missing = [r for r in wanted if r not in files]
    if missing:
        raise PaletteError(
            f"{folder}: missing sounds {', '.join(missing)} (found: {', '.join(files) or 'none'})"
        )
    return {role: read_wav_pcm16_24k_mono(files[role]) for role in wanted}


def read_each_sound(
    directory: Path | str, roles: Iterable[str] | None = None
) -> tuple[dict[str, bytes], dict[str, str]]:
    """:func:`read_palette`, each file on its own (a huxleyd extension): the sounds
    that load, and for each ``*.wav`` of ``directory`` (or each of ``roles``
    present there) that does not (not a PCM WAV, unreadable), by file name, one
    line why. One broken file silences its own sound, never the others."""
    folder = Path(directory)
    files = {p.stem: p for p in sorted(folder.glob("*.wav"))} if folder.is_dir() else {}
    wanted = [r for r in roles if r in files] if roles is not None else list(files)
    loaded: dict[str, bytes] = {}
    broken: dict[str, str] = {}
    for role in wanted:
        path = files[role]
        try:
            loaded[role] = read_wav_pcm16_24k_mono(path)
        except (PaletteError, OSError, ValueError, EOFError) as exc:
            why = getattr(exc, "strerror", None) if isinstance(exc, OSError) else None
            text = why or " ".join(str(exc).split()).replace(f"{path}: ", "")
            broken[path.name] = text
    return loaded, broken


def silence(duration_ms: int) -> bytes:
    """``duration_ms`` of PCM16 24 kHz mono silence."""
    return bytes(SAMPLE_RATE * SAMPLE_WIDTH * duration_ms // 1000)
