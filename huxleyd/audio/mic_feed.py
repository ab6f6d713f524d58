"""The mic side of the audio thread's period: the card's periods into the capture ring.

Each period :class:`~huxleyd.audio.audio_thread.AudioThread` reads one mic period
from the device into the capture chain and hands it here: :meth:`MicFeed.push`
resamples it to the rate asyncio asked for and pushes it, stamped with when the
card captured it, into the capture ring, waking the listener; while nobody
listens it only primes the chain (meter and resampler history, no frames, no
wake-ups). A late cycle then takes every whole period the C capture callback
already queued (:meth:`MicFeed.catch_up`), so none is overwritten unread.

It runs in the audio thread under the same real-time contract (no allocation, no
locks, no logging: the audio thread's module says so); asyncio only stores the
two request fields.
"""

from __future__ import annotations

from huxleyd.audio.backends.base import (
    AudioBackend,
    DeviceFormat,
    IoStatus,
    QueuedInput,
    StampedInput,
)
from huxleyd.audio.chains import CaptureChain
from huxleyd.audio.ring import AsyncWaker, FrameRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import Clock


class MicFeed:
    """The capture ring's writer: the mic's periods, stamped, at the asked rate."""

    def __init__(
        self,
        backend: AudioBackend,
        *,
        settings: AudioSettings,
        clock: Clock,
        capture: FrameRing,
        waker: AsyncWaker,
        capture_rate_hz: int,
    ) -> None:
        self._backend = backend
        self._clock = clock
        self._period_s = settings.period_ms / 1000.0
        self._capture = capture
        self._waker = waker
        self.req_capture_rate = capture_rate_hz
        """The capture rate asyncio asks for (set by asyncio, read each period)."""
        self.req_capture_active = True
        """Frames reach the capture ring only while someone listens (set by asyncio)."""
        self.queued = backend if isinstance(backend, QueuedInput) else None
        """The capture ring a late engine drains (the C capture callback), if any."""
        self._stamped = backend if isinstance(backend, StampedInput) else None
        """The backend's per-period capture stamps (the C capture callback's), if any."""
        self._catch_up_limit = settings.capture_ring_ms // settings.period_ms + 2
        self.caught_up = 0
        """Mic periods taken beyond one per cycle: the engine ran late and caught up."""

    def catch_up(self, capture: CaptureChain, fmt: DeviceFormat | None) -> None:
        """Late (a busy Python thread held the GIL): take every whole mic period the
        capture ring already holds, oldest first, so none is overwritten while the ring
        still has it. Bounded by the ring's depth; playback then mixes to its lead."""
        queued = self.queued
        if queued is None:
            return
        frames = capture.buffer.shape[0]
        for _ in range(self._catch_up_limit):
            if queued.input_queued_frames() < frames:
                return
            if self._backend.read(capture.buffer) is not IoStatus.OK:
                return  # a lost device shows in the next cycle's read
            self.caught_up += 1
            self.push(capture, fmt)

    def push(self, capture: CaptureChain, fmt: DeviceFormat | None) -> None:
        """The period just read into ``capture`` to the capture ring (or only primed)."""
        rate = self.req_capture_rate
        if not self.req_capture_active:
            # Nobody listens: keep the meter and the resampler's history
            # running (no resampling), but do not queue frames or wake the
            # event loop 50x/s.
            capture.prime(rate)
            return
        captured_at = self._captured_at(fmt) - capture.delay_s(rate)
        self._capture.push(capture.process(rate), rate_hz=rate, captured_at=captured_at)
        self._waker.notify()

    def _captured_at(self, fmt: DeviceFormat | None) -> float:
        """When the card captured the first frame of the period just read, on the
        engine's clock. The capture callback's own stamp where there is one: the
        read time is later by however late the engine read, which jittered by up to
        a period and ran 19 ms early on average once PortAudio's reported input
        latency was taken off (the clocked card), too far off for the echo
        canceller. Otherwise the read time minus the period, the device's input
        latency and what is queued behind it."""
        stamped = self._stamped
        ago = stamped.input_captured_ago() if stamped is not None else None
        if ago is not None:
            return self._clock.monotonic() - ago
        latency = fmt.input_latency_s if fmt is not None else 0.0
        queued = self.queued
        if queued is not None and fmt is not None:  # newer periods wait behind this one
            latency += queued.input_queued_frames() / fmt.input_rate_hz
        return self._clock.monotonic() - self._period_s - latency
