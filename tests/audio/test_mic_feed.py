"""The mic feed: each mic period the audio thread read goes to the capture ring,
stamped with when the card captured it; a late cycle takes every whole period
already queued; while nobody listens nothing is queued (the card is still read)."""

from __future__ import annotations

import numpy as np
import pytest

from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.audio.chains import CaptureChain
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mic_feed import MicFeed
from huxleyd.audio.ring import AsyncWaker, FrameRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import ManualClock
from huxleyd.pcm import RATE_HZ
from tests.fakes.audio_backends import QueuedMicBackend, StampedMicBackend

PERIOD = 480  # 20 ms at 24 kHz


def numbered_periods(first: int, count: int) -> bytes:
    """``count`` mic periods, period k holding the constant value 100 * k."""
    return np.repeat(np.arange(first, first + count) * 100, PERIOD).astype("<i2").tobytes()


class Rig:
    """A mic feed on an opened backend, as the audio thread holds it."""

    def __init__(self, backend: QueuedMicBackend, clock: ManualClock) -> None:
        settings = AudioSettings()
        self.backend = backend
        self.fmt: DeviceFormat = backend.open(period_ms=settings.period_ms)
        self.chain = CaptureChain(
            self.fmt,
            period_ms=settings.period_ms,
            mic_channel=settings.mic_channel,
            meter=LevelMeter(settings.period_ms / 1000),
        )
        self.ring = FrameRing(16, PERIOD)
        self.feed = MicFeed(
            backend,
            settings=settings,
            clock=clock,
            capture=self.ring,
            waker=AsyncWaker(),
            capture_rate_hz=RATE_HZ,
        )

    def cycle(self) -> None:
        """What the audio thread does with the mic in one period."""
        self.backend.read(self.chain.buffer)
        self.feed.push(self.chain, self.fmt)
        self.feed.catch_up(self.chain, self.fmt)

    def frames(self) -> list[tuple[int, float]]:
        """(the value in the middle of the frame, its captured time) of each queued."""
        out = []
        while (frame := self.ring.pop()) is not None:
            out.append((int(np.frombuffer(frame.pcm, "<i2")[PERIOD // 2]), frame.captured_at))
        return out


def test_a_late_cycle_takes_every_queued_period_in_order_a_period_apart() -> None:
    rig = Rig(QueuedMicBackend(), ManualClock(10.0))
    rig.backend.feed_mic(numbered_periods(1, 5))
    rig.cycle()
    frames = rig.frames()
    assert [value for value, _ in frames] == [100, 200, 300, 400, 500]
    assert np.allclose(np.diff([at for _, at in frames]), 0.020)
    assert rig.feed.caught_up == 4


def test_nobody_listening_reads_the_card_and_queues_nothing() -> None:
    rig = Rig(QueuedMicBackend(), ManualClock(10.0))
    rig.feed.req_capture_active = False
    rig.backend.feed_mic(numbered_periods(1, 3))
    rig.cycle()
    assert rig.frames() == []
    assert rig.backend.input_queued_frames() == 0  # read, so none is overwritten unread
    rig.feed.req_capture_active = True
    rig.backend.feed_mic(numbered_periods(4, 1))
    rig.cycle()
    assert [value for value, _ in rig.frames()] == [400]


def test_a_frame_carries_the_time_the_card_stamped_however_late_it_is_read() -> None:
    clock = ManualClock(50.0)
    rig = Rig(StampedMicBackend(clock), clock)
    stamps = [50.0005, 50.0203]
    assert isinstance(rig.backend, StampedMicBackend)
    rig.backend.feed_stamped(numbered_periods(1, 2), stamps)
    clock.advance(0.137)
    rig.cycle()
    assert [at for _, at in rig.frames()] == pytest.approx(stamps, abs=1e-9)
