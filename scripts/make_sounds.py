#!/usr/bin/env python3
"""Synthesise huxleyd's earcons into a directory (``make sounds`` → ``sounds/``).

Usage: ``python scripts/make_sounds.py OUTPUT_DIR``

Every sound is PCM16, 24 kHz, mono, built from sine partials with smooth
envelopes (raised-cosine attack, exponential decay, a release that ends on
exact zero: no clicks), peak-normalised per sound. The synthesis is
deterministic, so regenerating gives the same files (to one LSB across
platforms) and a test checks the committed WAVs against this script.

The palette, by intent:

- ``listen_start`` — two quick rising notes: "I'm listening".
- ``listen_stop`` — the same two notes falling: "got it".
- ``thinking`` — two soft, slow swells: working on it (quiet; may repeat).
- ``error`` — two low notes falling a minor third, hollow (odd partials).
- ``offline`` — three notes falling a major triad, slower: no connection.
- ``timer`` — a bell (inharmonic partials) struck three times.
- ``too_short`` — one short low blip with a downward bend: hold the button longer.
"""

from __future__ import annotations

import sys
import wave
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

RATE_HZ = 24_000
Signal = npt.NDArray[np.float64]


def _time(seconds: float) -> Signal:
    return np.arange(round(seconds * RATE_HZ)) / RATE_HZ


def envelope(seconds: float, *, attack_s: float, decay_s: float, release_s: float) -> Signal:
    """Raised-cosine attack, exponential decay (time constant ``decay_s``), cosine release to 0."""
    t = _time(seconds)
    env = np.exp(-t / decay_s)
    attack = min(len(t), round(attack_s * RATE_HZ))
    env[:attack] *= 0.5 - 0.5 * np.cos(np.pi * np.arange(attack) / attack)
    release = min(len(t), round(release_s * RATE_HZ))
    env[len(t) - release :] *= 0.5 + 0.5 * np.cos(np.pi * np.arange(1, release + 1) / release)
    return env


def note(
    freq_hz: float,
    seconds: float,
    *,
    partials: Sequence[tuple[float, float]] = ((1.0, 1.0), (2.0, 0.25)),
    attack_s: float = 0.005,
    decay_s: float = 0.12,
    release_s: float = 0.02,
    bend: float = 1.0,
) -> Signal:
    """A tone of ``(ratio, amplitude)`` partials; ``bend`` glides the pitch by that factor."""
    t = _time(seconds)
    glide = freq_hz * (1.0 + (bend - 1.0) * t / max(seconds, 1e-9))
    phase = 2 * np.pi * np.cumsum(glide) / RATE_HZ
    tone = sum(amplitude * np.sin(ratio * phase) for ratio, amplitude in partials)
    return np.asarray(tone, dtype=np.float64) * envelope(
        seconds, attack_s=attack_s, decay_s=decay_s, release_s=release_s
    )


def sequence(parts: Sequence[tuple[float, Signal]], *, seconds: float) -> Signal:
    """Place each signal at its start time (seconds) in a buffer of ``seconds``."""
    out = np.zeros(round(seconds * RATE_HZ))
    for start_s, signal in parts:
        at = round(start_s * RATE_HZ)
        end = min(len(out), at + len(signal))
        out[at:end] += signal[: end - at]
    return out


def normalise(signal: Signal, peak_dbfs: float) -> Signal:
    peak = float(np.max(np.abs(signal)))
    return signal * (10 ** (peak_dbfs / 20) / peak)


def listen_start() -> Signal:
    a = note(659.25, 0.09, decay_s=0.08)
    b = note(987.77, 0.12, decay_s=0.08)
    return normalise(sequence([(0.0, a), (0.07, b)], seconds=0.2), -6)


def listen_stop() -> Signal:
    a = note(987.77, 0.09, decay_s=0.08)
    b = note(659.25, 0.12, decay_s=0.08)
    return normalise(sequence([(0.0, a), (0.07, b)], seconds=0.2), -6)


def thinking() -> Signal:
    soft = ((1.0, 1.0), (2.0, 0.1))
    a = note(523.25, 0.3, partials=soft, attack_s=0.12, decay_s=0.5, release_s=0.15)
    b = note(659.25, 0.3, partials=soft, attack_s=0.12, decay_s=0.5, release_s=0.15)
    return normalise(sequence([(0.0, a), (0.3, b)], seconds=0.62), -14)


def error() -> Signal:
    hollow = ((1.0, 1.0), (3.0, 0.3), (5.0, 0.12))
    a = note(440.0, 0.16, partials=hollow, decay_s=0.15)
    b = note(369.99, 0.24, partials=hollow, decay_s=0.15)
    return normalise(sequence([(0.0, a), (0.15, b)], seconds=0.4), -6)


def offline() -> Signal:
    notes = [(783.99, 0.0), (659.25, 0.17), (523.25, 0.34)]
    parts = [(start, note(freq, 0.22, decay_s=0.2, release_s=0.04)) for freq, start in notes]
    return normalise(sequence(parts, seconds=0.58), -6)


def timer() -> Signal:
    bell = ((1.0, 1.0), (2.76, 0.35), (5.40, 0.15), (8.93, 0.06))
    strike = note(1046.5, 0.42, partials=bell, attack_s=0.002, decay_s=0.16, release_s=0.05)
    return normalise(sequence([(0.0, strike), (0.45, strike), (0.9, strike)], seconds=1.34), -6)


def too_short() -> Signal:
    return normalise(note(392.0, 0.13, decay_s=0.08, bend=0.8), -8)


SOUNDS: dict[str, Callable[[], Signal]] = {
    "listen_start": listen_start,
    "listen_stop": listen_stop,
    "thinking": thinking,
    "error": error,
    "offline": offline,
    "timer": timer,
    "too_short": too_short,
}
"""Earcon name → synthesiser. The names are the values of :data:`huxleyd.audio.types.SHIPPED_EARCONS`."""


def render(name: str) -> npt.NDArray[np.int16]:
    """The PCM16 samples of one earcon."""
    signal = SOUNDS[name]()
    return np.clip(np.round(signal * 32767), -32768, 32767).astype(np.int16)


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SOUNDS:
        path = directory / f"{name}.wav"
        with wave.open(str(path), "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(RATE_HZ)
            wav.writeframes(render(name).astype("<i2").tobytes())
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for path in write(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
