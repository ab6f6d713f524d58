"""The idle thread's sleep: no lost wake-up, and a seamless mic after it."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.chains import CaptureChain
from huxleyd.audio.doorbell import Doorbell
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.idle import IdleSleeper
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import ManualClock
from tests.audio.signals import tone_samples
from tests.fakes.audio_backends import QueuedMicBackend

RATE = 48000
PERIOD = 960


def test_a_ring_after_arming_is_not_lost_and_a_ring_before_is_not_kept() -> None:
    bell = Doorbell()
    bell.ring()  # nobody armed: nothing to wake, nothing remembered
    bell.arm()
    assert bell.sleep(0.0) is False
    bell.arm()
    bell.ring()  # between the arm and the sleep: the sleep returns at once
    assert bell.sleep(30.0) is True and bell.rings == 1


def test_a_request_that_lands_before_the_recheck_keeps_the_thread_awake() -> None:
    bell = Doorbell()
    backend = QueuedMicBackend(rate_hz=RATE)
    sleeper = IdleSleeper(
        bell,
        backend,
        backend,
        clock=ManualClock(),
        period_s=0.02,
        meters=(LevelMeter(0.02), LevelMeter(0.02)),
    )
    assert sleeper.sleep(lambda: False, threading.Event()) is None
    assert not bell.armed and sleeper.sleeps == 0


def capture_chain(meter: LevelMeter) -> CaptureChain:
    fmt = DeviceFormat(
        input_rate_hz=RATE,
        output_rate_hz=RATE,
        input_channels=1,
        output_channels=1,
        output_latency_s=0.0,
        input_latency_s=0.0,
        paced=False,
    )
    return CaptureChain(fmt, period_ms=20, mic_channel=0, meter=meter)


def test_after_a_sleep_the_next_mic_frame_is_seamless_and_metered() -> None:
    """Woken with 10 periods captured: the frame after the resync equals what a chain
    that never slept computes for the same period (its resampler history is right)."""
    mic = tone_samples(700, 0.2, -6, rate_hz=RATE)  # 10 periods
    awake = capture_chain(LevelMeter(0.02))
    for k in range(10):
        awake.buffer[:, 0] = mic[k * PERIOD : (k + 1) * PERIOD]
        expected = awake.process(24000).copy()

    backend = QueuedMicBackend(rate_hz=RATE)
    backend.open(period_ms=20)
    meter = LevelMeter(0.02)
    slept = capture_chain(meter)
    backend.feed_mic(mic.astype("<i2").tobytes())
    sleeper = IdleSleeper(
        Doorbell(),
        backend,
        backend,
        clock=ManualClock(),
        period_s=0.02,
        meters=(meter, LevelMeter(0.02)),
    )
    sleeper.resync(slept, 24000)
    assert backend.discarded == 8 * PERIOD  # nobody listened: skipped, not lost
    assert meter.peak_dbfs > -7  # primed from the ninth period: the meter saw it
    backend.read(slept.buffer)  # the engine's next read: the newest period
    assert np.array_equal(slept.process(24000), expected)


def test_every_request_and_write_rings_the_doorbell() -> None:
    """A sleeping idle thread must wake for each thing asyncio can ask."""
    engine = AudioEngine(WavBackend(), settings=AudioSettings(), clock=ManualClock())
    bell = engine._mixer.doorbell
    speech = engine.source("speech")
    requests: dict[str, Callable[[], object]] = {
        "write": lambda: speech.write_nowait(bytes(480)),
        "duck": speech.duck,
        "unduck": speech.unduck,
        "pause": speech.pause,
        "resume": speech.resume,
        "gain": lambda: speech.set_gain(-3.0),
        "flush": speech.flush,
        "master": lambda: engine.set_master_gain(0.5),
        "earcon": lambda: engine.play_earcon(bytes(480)),
        "mic on": lambda: engine.set_capture_active(True),
    }
    for name, request in requests.items():
        bell.arm()
        request()
        assert not bell.armed, f"{name} did not ring the doorbell"
    assert bell.rings >= len(requests)
    engine.close()
