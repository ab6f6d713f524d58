"""The earcons huxleyd plays itself (``sounds/*.wav``, made by ``scripts/make_sounds.py``).

Load them once at start with :func:`load_earcons` and hand the PCM to
``engine.play_earcon``. Every file must be PCM16, 24 kHz, mono — the
project's audio contract — and a missing or malformed one fails at start
with the file and what was wrong, not later with silence.
"""

from __future__ import annotations

from pathlib import Path

from huxleyd.audio.types import OPTIONAL_EARCONS, SHIPPED_EARCONS, Earcon
from huxleyd.errors import AudioError
from huxleyd.pcm import RATE_HZ, read_wav

__all__ = ["OPTIONAL_EARCONS", "SHIPPED_EARCONS", "Earcon", "load_earcon", "load_earcons"]


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
    """Every shipped :class:`Earcon` from ``directory``, and the optional ones it
    holds; AudioError naming what is missing or wrong."""
    missing = [f"{e}.wav" for e in SHIPPED_EARCONS if not (directory / f"{e}.wav").is_file()]
    if missing:
        raise AudioError(f"{directory}: missing earcon(s) {', '.join(missing)} (run `make sounds`)")
    present = [e for e in OPTIONAL_EARCONS if (directory / f"{e}.wav").is_file()]
    return {e: load_earcon(directory / f"{e}.wav") for e in (*SHIPPED_EARCONS, *present)}


def load_each_earcon(directory: Path) -> tuple[dict[Earcon, bytes], dict[str, str]]:
    """Each earcon on its own: the ones that load, and for each shipped one that
    does not (missing, not a WAV, the wrong format) the one line why, by file
    name. One broken file silences its own cue, never the other six."""
    loaded: dict[Earcon, bytes] = {}
    broken: dict[str, str] = {}
    for earcon in SHIPPED_EARCONS:
        path = directory / f"{earcon}.wav"
        if not path.is_file():
            broken[path.name] = "missing"
            continue
        try:
            loaded[earcon] = load_earcon(path)
        except (AudioError, OSError, ValueError, EOFError) as exc:
            broken[path.name] = " ".join(str(exc).split()).replace(f"{path}: ", "")
    for earcon in OPTIONAL_EARCONS:
        path = directory / f"{earcon}.wav"
        if path.is_file():
            try:
                loaded[earcon] = load_earcon(path)
            except (AudioError, OSError, ValueError, EOFError) as exc:
                broken[path.name] = " ".join(str(exc).split()).replace(f"{path}: ", "")
    return loaded, broken


def earcons_problem(directory: Path, broken: dict[str, str]) -> str | None:
    """The degraded record's line for ``broken`` (None: every earcon plays)."""
    if not broken:
        return None
    each = "; ".join(f"{name}: {why}" for name, why in sorted(broken.items()))
    return f"{directory}: {each}: those cues are silent, the others play (run `make sounds`)"
