"""A late engine catches up: every whole mic period already captured is taken, in order."""

from __future__ import annotations

import numpy as np
import pytest

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import ManualClock
from tests.fakes.audio_backends import QueuedMicBackend, StampedMicBackend

PERIOD = 480  # 20 ms at 24 kHz


def numbered_periods(first: int, count: int) -> bytes:
    """``count`` mic periods, period k holding the constant value 100 * k."""
    return np.repeat(np.arange(first, first + count) * 100, PERIOD).astype("<i2").tobytes()


def test_a_late_engine_drains_every_captured_period_in_one_cycle() -> None:
    backend = QueuedMicBackend()
    engine = AudioEngine(backend, settings=AudioSettings(), clock=ManualClock())
    engine.step()  # opened; one period of silence read
    engine.drain_mic()
    backend.feed_mic(numbered_periods(1, 12))  # the engine slept through 12 periods
    engine.step()
    frames = []
    while (frame := engine.read_mic_nowait()) is not None:
        frames.append(np.frombuffer(frame.pcm, dtype="<i2"))
    assert [int(f[PERIOD // 2]) for f in frames] == [100 * k for k in range(1, 13)]
    assert engine.stats().mic_frames_dropped == 0 and engine.stats().overruns == 0
    assert engine.caught_up == 11  # one period read as usual, eleven caught up
    engine.close()


def test_the_captured_times_of_a_backlog_are_a_period_apart() -> None:
    backend = QueuedMicBackend()
    clock = ManualClock()
    engine = AudioEngine(backend, settings=AudioSettings(), clock=clock)
    engine.step()
    engine.drain_mic()
    backend.feed_mic(numbered_periods(1, 4))
    engine.step()
    times = []
    while (frame := engine.read_mic_nowait()) is not None:
        times.append(frame.captured_at)
    assert len(times) == 4 and np.allclose(np.diff(times), 0.020)
    engine.close()


def test_a_backlog_keeps_the_capture_times_the_card_stamped() -> None:
    """Issue 29: with the capture callback's stamps, a frame's capture time is when
    the card captured it, not when the engine got to read it: read late, in a
    backlog, the frames keep their stamps (jittered ones too: each is the card's).
    The engine used to compute it from the read time, the periods queued behind
    and the input latency PortAudio reports (19 ms early on the clocked card)."""
    clock = ManualClock(50.0)
    backend = StampedMicBackend(clock)
    engine = AudioEngine(backend, settings=AudioSettings(), clock=clock)
    engine.step()
    engine.drain_mic()
    stamps = [50.0005, 50.0203, 50.0401, 50.0607]
    backend.feed_stamped(numbered_periods(1, 4), stamps)
    clock.advance(0.137)  # the engine wakes late
    engine.step()
    times = []
    while (frame := engine.read_mic_nowait()) is not None:
        times.append(frame.captured_at)
    assert times == pytest.approx(
        stamps, abs=1e-9
    )  # 24 kHz in and out: no resampler delay to take off
    engine.close()


def test_a_partial_period_waits_for_the_next_cycle() -> None:
    backend = QueuedMicBackend()
    engine = AudioEngine(backend, settings=AudioSettings(), clock=ManualClock())
    engine.step()
    engine.drain_mic()
    backend.feed_mic(numbered_periods(1, 2) + bytes(2 * (PERIOD // 2)))
    engine.step()
    assert engine.caught_up == 1  # two whole periods: one read, one caught up; half waits
    engine.close()
