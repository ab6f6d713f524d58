"""The real-time contract, checked: the steady-state period allocates no sample buffer.

tracemalloc counts every Python thread of the process. In the test session
other tests leave threads behind (executors, watchers) that may allocate while
the periods run, and under load they did (380 bytes once). So the measurement
runs in a fresh interpreter whose only thread is the one stepping the engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import SOURCES
from huxleyd.clock import ManualClock
from tests.audio.signals import tone
from tests.fakes.audio_backends import NullBackend

SMALLEST_BUFFER_BYTES = 480 * 4
"""One float32 period at 24 kHz: the smallest sample buffer the loop could allocate."""

REPO = Path(__file__).resolve().parents[2]


def measure_busy_periods(leak: bool) -> dict[str, int]:
    """Step a busy engine 50 periods under tracemalloc; ``leak`` keeps one buffer per period."""
    rings = {f"{name}_ring_ms": 10_000 for name in SOURCES}
    engine = AudioEngine(NullBackend(48000), settings=AudioSettings(**rings), clock=ManualClock())  # type: ignore[arg-type]
    for name, freq in zip(SOURCES, (220, 330, 440, 550), strict=True):
        engine.source(name).write_nowait(tone(freq, 9.0, 0))
    engine.source("content").duck()
    kept: list[np.ndarray] = []
    # Traced from the start: an object made before tracing and replaced inside
    # the window would count its successor and not its own release.
    tracemalloc.start()
    try:
        engine.run_periods(300)  # past the playout history's first lap: steady state
        engine.source("content").unduck()
        engine.set_master_gain(0.5)
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(50):
            engine.step()
            if leak:
                kept.append(np.zeros(480, dtype=np.float32))
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {
        "periods": engine.stats().periods,
        "limiter_periods": engine._mixer.limiter.active_periods,
        "peak_growth": peak - before,
        "kept": after - before,
    }


def measured_alone(leak: bool) -> dict[str, int]:
    """:func:`measure_busy_periods` in a fresh interpreter with no other thread."""
    code = f"import json; from tests.audio.test_realtime import measure_busy_periods as m; print(json.dumps(m({leak})))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_busy_period_allocates_no_sample_buffer() -> None:
    """Four loud sources (limiter working), a duck ramp, 48 kHz resampling both ways."""
    result = measured_alone(leak=False)
    assert result["periods"] == 350 and result["limiter_periods"] > 0
    # Only views, scalars and ints, each freed at once:
    assert result["peak_growth"] < SMALLEST_BUFFER_BYTES
    assert result["kept"] < 256  # nothing accumulates


def test_the_check_above_can_fail() -> None:
    """The same measurement, with one 24 kHz buffer kept per period, is caught by both bounds."""
    result = measured_alone(leak=True)
    assert result["peak_growth"] >= SMALLEST_BUFFER_BYTES
    assert result["kept"] >= 50 * SMALLEST_BUFFER_BYTES
