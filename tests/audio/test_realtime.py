"""The real-time contract, checked: the steady-state period allocates no sample buffer."""

from __future__ import annotations

import tracemalloc

import numpy as np

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import SOURCES
from huxleyd.clock import ManualClock
from tests.audio.signals import tone
from tests.fakes.audio_backends import NullBackend

SMALLEST_BUFFER_BYTES = 480 * 4
"""One float32 period at 24 kHz: the smallest sample buffer the loop could allocate."""


def test_a_busy_period_allocates_no_sample_buffer() -> None:
    """Four loud sources (limiter working), a duck ramp, 48 kHz resampling both ways."""
    rings = {f"{name}_ring_ms": 10_000 for name in SOURCES}
    engine = AudioEngine(NullBackend(48000), settings=AudioSettings(**rings), clock=ManualClock())  # type: ignore[arg-type]
    for name, freq in zip(SOURCES, (220, 330, 440, 550), strict=True):
        engine.source(name).write_nowait(tone(freq, 9.0, 0))
    engine.source("content").duck()
    tracemalloc.start()
    try:
        engine.run_periods(300)  # past the playout history's first lap: steady state
        engine.source("content").unduck()
        engine.set_master_gain(0.5)
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        engine.run_periods(50)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert engine.stats().periods == 350 and engine._mixer.limiter.active_periods > 0
    assert peak - before < SMALLEST_BUFFER_BYTES  # only views, scalars and ints, freed at once
    assert after - before < 256  # nothing accumulates


def test_the_check_above_can_fail() -> None:
    """A period that made one 24 kHz buffer would be caught."""
    engine = AudioEngine(NullBackend(48000), settings=AudioSettings(), clock=ManualClock())
    engine.run_periods(300)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        engine.step()
        leak = np.zeros(480, dtype=np.float32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del leak
    assert peak - before >= SMALLEST_BUFFER_BYTES
