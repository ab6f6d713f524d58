"""The earcons huxleyd plays itself (``sounds/*.wav``, made by ``scripts/make_sounds.py``).

Load them once at start with :func:`load_earcons` and hand the PCM to
``engine.play_earcon``. Every file must be PCM16, 24 kHz, mono — the
project's audio contract — and a missing or malformed one fails at start
with the file and what was wrong, not later with silence.
"""

from __future__ import annotations

import enum
from pathlib import Path

from huxleyd.audio.pcm import RATE_HZ, read_wav
from huxleyd.errors import AudioError


class Earcon(enum.Enum):
    """A UI sound; the value is its file name without ``.wav``."""

    LISTEN_START = "listen_start"
    LISTEN_STOP = "listen_stop"
    THINKING = "thinking"
    ERROR = "error"
    OFFLINE = "offline"
    TIMER = "timer"
    TOO_SHORT = "too_short"


def default_sounds_dir() -> Path:
    """``sounds/`` of a source checkout (installs configure ``daemon.sounds_dir``)."""
    return Path(__file__).resolve().parents[2] / "sounds"


def load_earcon(path: Path) -> bytes:
    """One earcon file as PCM16 24 kHz mono bytes, checked."""
    wav = read_wav(path)
    if wav.rate_hz != RATE_HZ or wav.channels != 1:
        raise AudioError(
            f"{path}: earcons must be PCM16 {RATE_HZ} Hz mono, got {wav.rate_hz} Hz "
            f"with {wav.channels} channel(s) (regenerate with `make sounds`)"
        )
    if wav.samples.shape[0] == 0:
        raise AudioError(f"{path}: the earcon is empty")
    return wav.mono().tobytes()


def load_earcons(directory: Path) -> dict[Earcon, bytes]:
    """Every :class:`Earcon` from ``directory``; AudioError naming what is missing or wrong."""
    missing = [e.value + ".wav" for e in Earcon if not (directory / f"{e.value}.wav").is_file()]
    if missing:
        raise AudioError(f"{directory}: missing earcon(s) {', '.join(missing)} (run `make sounds`)")
    return {earcon: load_earcon(directory / f"{earcon.value}.wav") for earcon in Earcon}
