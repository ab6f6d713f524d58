"""The engine on its own thread: stalls of the asyncio loop, scenario speed, loss, crashes."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.pacing import ScaledClock
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import DeviceState
from huxleyd.clock import ManualClock
from tests.audio.signals import dominant_frequency, level_at, tone
from tests.fakes.audio_backends import FlakyBackend, LockstepWavBackend
from tests.fakes.audio_stall import stall_scenario


def longest_zero_run(samples: np.ndarray) -> int:
    zero = np.concatenate([[False], samples == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    return int((edges[1::2] - edges[::2]).max()) if len(edges) else 0


async def test_a_500_ms_stall_glitches_nothing_when_the_rings_hold_enough() -> None:
    engine, backend, frames, mic = await stall_scenario(lead_ms=1000, capture_ring_ms=2000)
    stats = engine.stats()
    assert stats.source_gaps == 0 and stats.underruns == 0
    out = backend.speaker_samples()[:, 0]
    start = int(np.flatnonzero(out)[0])
    assert longest_zero_run(out[start:]) <= 2  # only the sine's own zero crossings
    assert stats.mic_frames_dropped == 0
    assert [f.seq for f in frames] == list(range(len(frames)))  # all of them, in order
    assert len(frames) >= 50  # 15 + 25 (the stall) + 15 periods ran
    received = np.frombuffer(b"".join(f.pcm for f in frames), "<i2")
    np.testing.assert_array_equal(received, mic[: len(received)])


async def test_the_same_stall_with_rings_too_small_is_heard_and_counted() -> None:
    """The check above can fail: shallow rings make the stall audible and lose mic audio."""
    engine, backend, frames, _ = await stall_scenario(lead_ms=100, capture_ring_ms=200)
    stats = engine.stats()
    assert stats.source_gaps >= 1 and stats.underruns >= 1
    out = backend.speaker_samples()[:, 0]
    start = int(np.flatnonzero(out)[0])
    assert longest_zero_run(out[start:]) > 0.2 * 24000
    assert stats.mic_frames_dropped > 0
    seqs = [f.seq for f in frames]
    assert seqs != list(range(len(seqs)))


async def test_scenario_mode_loops_mic_to_speaker_faster_than_real_time() -> None:
    """What a coordinator end-to-end test does: feed the mic, answer, read the speaker.

    Lockstep: each period waits for the loop's echo, so a loaded machine
    cannot leave gaps in the echo (it did: -10.22 dB instead of -10)."""
    backend = LockstepWavBackend(keep_speaker=True)
    backend.bind(asyncio.get_running_loop())
    backend.feed_mic(tone(700, 1.0, -10))
    clock = ScaledClock(20.0)
    engine = AudioEngine(backend, settings=AudioSettings(), clock=clock)
    # One period of lead, as any producer keeps: the thread may mix between
    # pushing a mic frame and the loop echoing it, or after (GIL switches),
    # so without a lead one period in some runs found the ring dry.
    await engine.source("comms").write(bytes(960), item_id="lead")
    engine.start()
    for _ in range(50):  # 1 s of mic
        frame = await engine.read_mic()
        await engine.source("comms").write(frame.pcm, item_id="echo")
    await engine.source("comms").drained()
    assert engine.source("comms").played_ms("echo") == 1000
    backend.release()
    engine.close()
    assert backend.waits_timed_out == 0
    out = backend.speaker_samples()[:, 0]
    body = out[np.flatnonzero(out)[0] :][2400:21600]
    assert dominant_frequency(body, 24000) == pytest.approx(700, abs=1)
    assert level_at(body, 700, 24000) == pytest.approx(-10, abs=0.1)
    assert clock.monotonic() >= 1.0  # a virtual second went by


async def test_a_lost_device_is_reported_retried_and_reopened() -> None:
    clock = ManualClock()
    backend = FlakyBackend(lose_at_read={5}, refuse_opens=1)
    engine = AudioEngine(backend, settings=AudioSettings(reopen_interval_s=3.0), clock=clock)
    states: list[DeviceState] = []
    engine.on_device_state(states.append)
    speech = engine.source("speech")
    await speech.write(tone(440, 2.0, -10), item_id="r")
    engine.run_periods(6)  # the sixth read finds the device gone
    assert engine.stats().device_state is DeviceState.LOST and backend.closes == 1
    engine.run_periods(10)  # keeps running, plays to nowhere, produces no mic frames
    assert engine.stats().periods == 16
    assert engine.drain_mic() == 5
    clock.advance(3.0)
    engine.step()  # the first retry fails
    assert engine.stats().device_state is DeviceState.LOST
    clock.advance(1.0)
    engine.step()  # not yet: retries are 3 s apart
    assert backend.open_attempts == 2
    clock.advance(2.0)
    engine.step()
    assert engine.stats().device_state is DeviceState.OPEN and backend.is_open
    assert states == [
        DeviceState.OPEN,
        DeviceState.LOST,
        DeviceState.REOPENING,
        DeviceState.LOST,
        DeviceState.REOPENING,
        DeviceState.OPEN,
    ]
    engine.run_periods(2)
    assert engine.read_mic_nowait() is not None
    assert (
        engine.source("speech").played_ms("r") == 21 * 20
    )  # time ran on while the device was away


async def test_the_thread_keeps_running_while_the_device_is_lost() -> None:
    backend = FlakyBackend(lose_at_read={2}, refuse_opens=1000)
    engine = AudioEngine(
        backend, settings=AudioSettings(reopen_interval_s=0.1), clock=ScaledClock(10.0)
    )
    engine.start()
    for _ in range(200):
        await asyncio.sleep(0.01)
        if engine.stats().periods > 40:
            break
    stats = engine.stats()
    engine.close()
    assert stats.running and stats.periods > 40
    assert stats.device_state in (DeviceState.LOST, DeviceState.REOPENING)
    assert backend.open_attempts >= 3  # it kept retrying


async def test_a_bug_in_a_period_is_reported_and_the_device_reopened(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = FlakyBackend(explode_at_read=3)
    engine = AudioEngine(
        backend, settings=AudioSettings(reopen_interval_s=0.1), clock=ScaledClock(20.0)
    )
    with caplog.at_level(logging.ERROR, logger="huxleyd.audio"):
        engine.start()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if engine.stats().faults and engine.stats().device_state is DeviceState.OPEN:
                break
        await engine.read_mic()  # mic frames flow again after the reopen
    stats = engine.stats()
    assert stats.running and stats.faults == 1 and engine.crash is None
    assert stats.last_fault is not None and "backend bug" in stats.last_fault
    assert "audio_period_failed" in caplog.text
    assert backend.open_attempts == 2
    engine.close()


async def test_a_write_error_on_the_speaker_never_leaves_the_audio_dead() -> None:
    """Issue 13, case 8: a write error used to kill the audio thread for good, and every
    turn then stuck in ``speaking``. The engine reopens the device and speech is heard."""
    backend = FlakyBackend(explode_at_write=5)
    engine = AudioEngine(
        backend, settings=AudioSettings(reopen_interval_s=0.2), clock=ScaledClock(10.0)
    )
    engine.start()
    speech = engine.source("speech")
    await speech.write(tone(440, 1.0, -10), item_id="after")
    await asyncio.wait_for(engine.source("speech").drained(), timeout=30)  # never stuck in speaking
    stats = engine.stats()
    assert stats.running and stats.faults == 1
    assert stats.device_state is DeviceState.OPEN and backend.open_attempts == 2
    assert engine.source("speech").played_ms("after") == 1000
    engine.close()


async def test_a_slow_device_write_is_counted_as_a_late_period() -> None:
    backend = FlakyBackend(slow_write_s={3: 0.1}, xrun_writes={5}, xrun_reads={6})
    engine = AudioEngine(backend, settings=AudioSettings())
    engine.start()
    for _ in range(500):
        await asyncio.sleep(0.01)
        if engine.stats().periods >= 12:
            break
    engine.close()
    stats = engine.stats()
    assert stats.late_periods >= 1
    assert stats.underruns == 1 and stats.overruns == 1
    assert not stats.running and backend.closes == 1
