"""The idle path (no source has audio, no ramp runs: no mixing, no resampling) changes
nothing that can be heard or counted: random control scripts, compared bit for bit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import SOURCES
from huxleyd.clock import ManualClock
from tests.audio.scripts import Script, poke


def play_script(seed: int, *, idle_path: bool, rate_hz: int) -> tuple[np.ndarray, list[object]]:
    """Run 200 periods of random writes, gaps, ducks, pauses, flushes, gains and
    earcons; return the speaker output and everything the engine reports."""
    rng = random.Random(seed)
    backend = WavBackend(keep_speaker=True, rate_hz=rate_hz)
    engine = AudioEngine(
        backend, settings=AudioSettings(), clock=ManualClock(), idle_path=idle_path
    )
    seen: list[object] = []
    for period in range(200):
        poke(engine, rng, period, Script())
        engine.step()
        stats = engine.stats()
        seen.append((stats.underruns, stats.source_gaps, stats.output_peak_dbfs))
        seen.append(tuple(engine.source(name).channel.playout.played_pos for name in SOURCES))
    engine.close()
    return backend.speaker_samples()[:, 0].copy(), seen


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("rate_hz", [24000, 48000])
def test_the_idle_path_is_bit_identical(seed: int, rate_hz: int) -> None:
    fast, fast_seen = play_script(seed, idle_path=True, rate_hz=rate_hz)
    full, full_seen = play_script(seed, idle_path=False, rate_hz=rate_hz)
    assert np.array_equal(fast, full)
    assert fast_seen == full_seen


def test_the_idle_path_is_taken_when_nothing_plays() -> None:
    """It must actually run: an idle engine never mixes (a check that can fail)."""
    backend = WavBackend(keep_speaker=True, rate_hz=48000)
    engine = AudioEngine(backend, settings=AudioSettings(), clock=ManualClock())
    mixed = 0
    original = engine._mixer.mix

    def counting(out: np.ndarray) -> None:
        nonlocal mixed
        mixed += 1
        original(out)

    engine._mixer.mix = counting  # type: ignore[method-assign]
    engine.run_periods(50)
    assert mixed == 1  # the first period only, which primes the resampler's history
    engine.close()
