"""Fake audio backends that misbehave on cue, for the engine's failure paths.

They record what the engine asked of them (``opens``, ``closes``) so tests
assert on behaviour, not on engine internals.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from huxleyd.audio.backends.base import DeviceFormat, IoStatus
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.clock import Clock
from huxleyd.errors import AudioDeviceError
from huxleyd.pcm import Int16Array


class FlakyBackend(WavBackend):
    """A WAV backend whose device can vanish and refuse to come back.

    ``lose_at_read`` — the read call numbers (0-based) that report LOST.
    ``refuse_opens`` — how many ``open`` calls fail after a loss.
    ``xrun_reads`` / ``xrun_writes`` — call numbers that report XRUN.
    ``slow_write_s`` — write call number → seconds to sleep (a stalled device).
    ``explode_at_read`` — a read call number that raises (a bug in a backend).
    ``explode_at_write`` — a write call number that raises ``OSError`` (a write
    error on the speaker that the backend did not turn into a status).
    """

    def __init__(
        self,
        *,
        lose_at_read: set[int] | None = None,
        refuse_opens: int = 0,
        xrun_reads: set[int] | None = None,
        xrun_writes: set[int] | None = None,
        slow_write_s: dict[int, float] | None = None,
        explode_at_read: int | None = None,
        explode_at_write: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.lose_at_read = lose_at_read or set()
        self.refuse_opens = refuse_opens
        self.xrun_reads = xrun_reads or set()
        self.xrun_writes = xrun_writes or set()
        self.slow_write_s = slow_write_s or {}
        self.explode_at_read = explode_at_read
        self.explode_at_write = explode_at_write
        self.reads = 0
        self.writes = 0
        self.closes = 0
        self.open_attempts = 0
        self._lost_once = False

    def open(self, *, period_ms: int) -> DeviceFormat:
        self.open_attempts += 1
        if self._lost_once and self.refuse_opens > 0:
            self.refuse_opens -= 1
            raise AudioDeviceError("fake device: No such device (unplugged)")
        return super().open(period_ms=period_ms)

    def read(self, out: Int16Array) -> IoStatus:
        index = self.reads
        self.reads += 1
        if index == self.explode_at_read:
            raise RuntimeError("backend bug")
        if index in self.lose_at_read:
            self._lost_once = True
            return IoStatus.LOST
        status = super().read(out)
        return IoStatus.XRUN if index in self.xrun_reads else status

    def write(self, data: Int16Array) -> IoStatus:
        index = self.writes
        self.writes += 1
        if index == self.explode_at_write:
            raise OSError(5, "fake device: Input/output error on write")
        if index in self.slow_write_s:
            time.sleep(self.slow_write_s[index])
        super().write(data)
        return IoStatus.XRUN if index in self.xrun_writes else IoStatus.OK

    def close(self) -> None:
        if self.is_open:
            self.closes += 1
        super().close()


class NullBackend:
    """A device that costs nothing (silence in, output dropped): only the engine's work remains."""

    def __init__(self, rate_hz: int = 48000) -> None:
        self.rate_hz = rate_hz

    def open(self, *, period_ms: int) -> DeviceFormat:
        rate = self.rate_hz
        return DeviceFormat(rate, rate, 1, 1, 0.0, 0.0, paced=False, description="null")

    def read(self, out: Int16Array) -> IoStatus:
        return IoStatus.OK

    def write(self, data: Int16Array) -> IoStatus:
        return IoStatus.OK

    def close(self) -> None:
        pass


class LockstepWavBackend(WavBackend):
    """A WAV backend whose periods wait for the event loop to catch up.

    A scenario test runs the audio thread faster than real time on a
    :class:`~huxleyd.audio.pacing.ScaledClock`. On an idle machine the
    producers (the media runner, the speech writer, a test's echo loop)
    keep the rings full; on a loaded one the loop may not get the CPU for
    a few periods, the rings run dry, and the speaker file holds gaps that
    no device would have produced (a Pi runs at 1x with 200 ms of lead).
    So after each period this backend holds the audio thread until the
    loop has run every callback the period made ready (the wakers of the
    rings, then the tasks they wake): a period never starts before its
    producers had their turn, however slow the machine. Time stays an
    input: what reaches the speaker no longer depends on the load.

    Call :meth:`bind` on the loop before the engine starts, and
    :meth:`release` before closing the engine (whose ``close`` joins the
    thread from the loop, which could then not answer).
    """

    MIN_HOPS = 3
    """Loop iterations always granted: waker → future → task."""
    MAX_HOPS = 50
    """A loop that never goes quiet (a polling task) releases the thread after this many."""
    SAFETY_S = 5.0
    """A loop that does not answer at all (stopped, blocked) releases the thread after this."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._released = threading.Event()
        self.waits_timed_out = 0

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._released.clear()

    def release(self) -> None:
        """Stop waiting for the loop (before ``engine.close()``)."""
        self._released.set()

    def write(self, data: Int16Array) -> IoStatus:
        status = super().write(data)
        self._settle()
        return status

    def _settle(self) -> None:
        loop = self._loop
        if loop is None or self._released.is_set() or loop.is_closed():
            return
        settled = threading.Event()

        def hop(done: int) -> None:
            # The ready queue is private to asyncio's loops; without it
            # (another loop class) every wait takes MAX_HOPS iterations.
            ready = getattr(loop, "_ready", True)
            if done < self.MIN_HOPS or (ready and done < self.MAX_HOPS):
                loop.call_soon(hop, done + 1)
            else:
                settled.set()

        try:
            loop.call_soon_threadsafe(hop, 0)
        except RuntimeError:  # the loop closed meanwhile
            return
        deadline = time.monotonic() + self.SAFETY_S
        while not settled.wait(0.01):
            if self._released.is_set() or loop.is_closed():
                return
            if time.monotonic() > deadline:
                self.waits_timed_out += 1
                return


class QueuedMicBackend(WavBackend):
    """A WAV backend whose fed mic samples count as a capture ring the engine can see
    (:class:`~huxleyd.audio.backends.base.QueuedInput`), like the C capture callback's:
    feeding several periods at once is an engine that woke up late."""

    discarded = 0
    """Frames :meth:`discard_input` skipped."""

    def input_queued_frames(self) -> int:
        return self._feed.available() // self.input_channels

    def discard_input(self, keep_frames: int) -> int:
        drop = max(0, self.input_queued_frames() - keep_frames)
        self._feed.skip_to(self._feed.read_pos + drop * self.input_channels)
        self.discarded += drop
        return drop


class StampedMicBackend(QueuedMicBackend):
    """A queued mic whose periods carry their capture time, as the C capture
    callback's do (:class:`~huxleyd.audio.backends.base.StampedInput`): each period
    fed with :meth:`feed_stamped` was captured at its stamp on ``clock``, however
    late the engine reads it. Periods fed without one read as unstamped."""

    def __init__(self, clock: Clock, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._clock = clock
        self._stamps: deque[float | None] = deque()
        self._last: float | None = None

    def feed_stamped(self, pcm: bytes, stamps: list[float]) -> None:
        """Queue ``len(stamps)`` whole periods of ``pcm``, the k-th captured at ``stamps[k]``."""
        self.feed_mic(pcm)
        self._stamps.extend(stamps)

    def read(self, out: Int16Array) -> IoStatus:
        self._last = self._stamps.popleft() if self._stamps else None
        return super().read(out)

    def input_captured_ago(self) -> float | None:
        return None if self._last is None else self._clock.monotonic() - self._last


class TimedWavBackend(WavBackend):
    """A WAV backend that is also an :class:`~huxleyd.audio.backends.base.OutputClock`,
    as the C callback is: while the engine writes, the DAC trails the writes by
    ``dac_delay_frames``; a period without a write (idle) lets it play out what
    it had. A cut fades out over ``fade_frames`` from the frame at the DAC, and
    what was written between the fade's end and the resume is dropped."""

    def __init__(self, *, dac_delay_frames: int = 960, fade_frames: int = 120, **kwargs: Any):
        super().__init__(**kwargs)
        self.dac_delay_frames = dac_delay_frames
        self.fade_frames = fade_frames
        self.cuts: list[int] = []
        """The fade end of every cut asked, in order."""
        self._written = self._seen = self._heard = 0
        self._cut_seq = 0
        self._done = (0, 0, 0)
        self.expecting: list[int] = []
        """What the engine said of its sources after each period's writes: the
        expect_audio mask (bit i: SOURCES[i] has audio queued)."""

    def open(self, *, period_ms: int) -> DeviceFormat:
        self._written = self._seen = self._heard = 0
        self._cut_seq = 0
        self._done = (0, 0, 0)
        return super().open(period_ms=period_ms)

    def write(self, data: Int16Array) -> IoStatus:
        self._written += data.shape[0]
        return super().write(data)

    def written_frames(self) -> int:
        return self._written

    def heard_frame(self) -> int:
        """Asked once a period, after the writes (the engine's publish)."""
        wrote = self._written != self._seen
        self._seen = self._written
        at = self._written - (self.dac_delay_frames if wrote else 0)
        self._heard = max(self._heard, at)
        return self._heard

    def queued_frames(self) -> int:
        return self._written - self._heard

    def cut(self) -> tuple[int, int] | None:
        self._cut_seq += 1
        fade_end = self._heard + self.fade_frames
        self.cuts.append(fade_end)
        return self._cut_seq, fade_end

    def resume(self, seq: int, at: int) -> None:
        self._done = (seq, self.cuts[-1], at)

    def drops(self) -> tuple[int, int, int]:
        return self._done

    def expect_audio(self, sources: int) -> None:
        self.expecting.append(sources)

    def dropouts(self) -> int:
        return 0

    def dropout_ms(self) -> float:
        return 0.0

    def source_dropouts(self) -> tuple[int, ...]:
        return ()

    def xrun_counts(self) -> tuple[int, int]:
        return 0, 0


class XrunningBackend(TimedWavBackend):
    """A timed WAV backend whose card xruns when told (:attr:`xruns`, the count since
    the open, as the callbacks' flags) and which has a ladder of periods, as the C
    callback backend has (:class:`~huxleyd.audio.backends.base.WidenablePeriod`):
    each ``widen`` doubles the period the next ``open`` records in :attr:`opened`."""

    def __init__(self, *, steps: int = 3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.steps = steps
        self.scale = 1
        self.xruns = 0
        self.opened: list[int] = []
        """The ladder's factor at each open."""
        self.on_open: Callable[[], None] | None = None
        """Called in each ``open`` (a test's clock advancing: an open that takes time)."""
        self._why = ""

    def open(self, *, period_ms: int) -> DeviceFormat:
        self.xruns = 0  # the callbacks' counters restart with the stream
        self.opened.append(self.scale)
        if self.on_open is not None:
            self.on_open()
        return super().open(period_ms=period_ms)

    def card_xruns(self) -> int:
        return self.xruns

    def widen(self, reason: str) -> bool:
        if self.scale >= 2**self.steps:
            return False
        self.scale *= 2
        self._why = f"widened to x{self.scale} after {reason}"
        return True

    def narrow(self) -> bool:
        if self.scale == 1:
            return False
        self.scale //= 2
        self._why = f"widened to x{self.scale}" if self.scale > 1 else ""
        return True

    def widened(self) -> str:
        return self._why
