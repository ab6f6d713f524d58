"""Lock-free single-producer/single-consumer rings between asyncio and the audio thread.

Two shapes, each with a stated bound and drop policy (conventions rule 5, docs/conventions.md):

- :class:`SampleRing` — a FIFO of PCM16 samples for one playback source.
  Producer: one asyncio task. Consumer: the audio thread. When full the
  *producer* waits (:meth:`SampleRing.write` writes what fits; the caller
  awaits room through an :class:`AsyncWaker`); the thread never waits.
- :class:`FrameRing` — fixed-size capture frames. Producer: the audio
  thread. Consumer: one asyncio task. When full the *oldest* frame is lost
  and counted; the thread never waits.

Why no lock: each index has exactly one writer (``write_pos`` the producer,
``read_pos`` the consumer) and is a Python ``int`` published with a single
attribute store after the data it covers has been copied, which CPython's
GIL makes atomic and ordered. Readers of the other side's index see either
the old or the new value, both safe. (A free-threaded build would need
explicit atomics here.)

The audio-thread methods (:meth:`SampleRing.read_into`,
:meth:`SampleRing.skip_to`, :meth:`FrameRing.push`) copy into preallocated
arrays; the only objects they create are numpy views and ints, freed at once
by reference counting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

from huxleyd.audio.types import MicFrame
from huxleyd.pcm import INT16_SCALE, Float32Array, Int16Array

_TO_FLOAT = np.float32(1.0 / INT16_SCALE)


class AsyncWaker:
    """Wakes asyncio waiters from any thread, without a lock shared with it.

    The waiting side arms the waker and re-checks its condition before
    sleeping; the notifying side publishes its data first and then, only if
    armed, schedules one ``call_soon_threadsafe``. That ordering means no
    wake-up is lost, and a thread that notifies nobody pays one attribute read.
    """

    def __init__(self) -> None:
        self._armed = False
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._futures: list[asyncio.Future[None]] = []

    @property
    def closed(self) -> bool:
        return self._closed

    async def wait_for(self, ready: Callable[[], bool]) -> bool:
        """Return once ``ready()`` is true (True) or the waker is closed (False)."""
        loop = asyncio.get_running_loop()
        while not ready():
            if self._closed:
                return False
            future: asyncio.Future[None] = loop.create_future()
            self._futures.append(future)
            self._loop = loop
            self._armed = True
            if ready() or self._closed:
                self._discard(future)
                continue
            try:
                await future
            finally:
                self._discard(future)
        return True

    def notify(self) -> None:
        """Wake the waiters, if any. Safe from any thread; cheap when none wait."""
        if not self._armed:
            return
        self._armed = False
        loop = self._loop
        if loop is None:
            return
        # try/except rather than contextlib.suppress: no object per call in the audio thread
        try:  # noqa: SIM105
            loop.call_soon_threadsafe(self._fire)
        except RuntimeError:  # the loop is closed: nobody is left to wake
            pass

    def close(self) -> None:
        """Wake every waiter for good; later waits return False at once."""
        self._closed = True
        self._armed = True
        self.notify()

    def _fire(self) -> None:
        for future in self._futures:
            if not future.done():
                future.set_result(None)

    def _discard(self, future: asyncio.Future[None]) -> None:
        if future in self._futures:
            self._futures.remove(future)
        if not future.done():
            future.cancel()
        if not self._futures:
            self._armed = False


class SampleRing:
    """A bounded FIFO of int16 samples: asyncio writes, the audio thread reads.

    ``capacity`` samples are preallocated. Positions count samples since
    creation and never go back, so ``write_pos - read_pos`` is the fill level
    and any position can name a sample for the playout clock.
    """

    def __init__(
        self, capacity: int, *, name: str = "ring", samples: Int16Array | None = None
    ) -> None:
        if capacity <= 0:
            raise ValueError(f"{name}: capacity must be positive, got {capacity}")
        self.name = name
        self.capacity = capacity
        self._buf: Int16Array = np.zeros(capacity, dtype=np.int16) if samples is None else samples
        self.write_pos = 0
        """Samples ever written. Only the producer stores to it."""
        self.read_pos = 0
        """Samples ever consumed (played or skipped). Only the consumer stores to it."""
        self.high_water = 0
        """The fullest the ring has been, in samples (producer side). At ``capacity``
        the producer waits: the high-water mark and the bound are the same line."""
        self.on_write: Callable[[], None] | None = None
        """Called after each write that added samples (the idle audio thread's doorbell)."""

    @property
    def samples(self) -> Int16Array:
        """The backing store (``capacity`` samples; position ``p`` is at ``p % capacity``),
        for the C mixer, which reads it in place (consumer side, before advancing)."""
        return self._buf

    def available(self) -> int:
        """Samples queued and not yet consumed."""
        return self.write_pos - self.read_pos

    def free(self) -> int:
        """Samples that can be written now without waiting."""
        return self.capacity - (self.write_pos - self.read_pos)

    # -- producer side ------------------------------------------------------

    def write(self, samples: Int16Array) -> int:
        """Copy as many of ``samples`` as fit; return how many were written."""
        count = min(len(samples), self.free())
        if count <= 0:
            return 0
        start = self.write_pos % self.capacity
        first = min(count, self.capacity - start)
        self._buf[start : start + first] = samples[:first]
        if count > first:
            self._buf[: count - first] = samples[first:count]
        self.write_pos += count  # publish after the copy
        fill = self.write_pos - self.read_pos
        if fill > self.high_water:
            self.high_water = fill
        if self.on_write is not None:
            self.on_write()
        return count

    def mark_end(self) -> None:
        """The producer's audio ends here for now (a reply's last delta is written):
        a held start plays at once, and running dry here is the end, not a late source.
        Only the C feeder's playout buffer listens (:class:`SharedSampleRing`)."""

    # -- consumer side (audio thread) ---------------------------------------

    def read_into(self, dst: Float32Array | Int16Array, offset: int, count: int) -> int:
        """Move up to ``count`` samples into ``dst[offset:]``; return how many.

        Float destinations receive samples scaled to [-1, 1). The rest of
        ``dst`` is not touched: the caller owns zero-filling.
        """
        count = min(count, self.write_pos - self.read_pos)
        if count <= 0:
            return 0
        start = self.read_pos % self.capacity
        first = min(count, self.capacity - start)
        self._copy(dst, offset, start, first)
        if count > first:
            self._copy(dst, offset + first, 0, count - first)
        self.read_pos += count  # publish after the copy
        return count

    def _copy(self, dst: Float32Array | Int16Array, at: int, start: int, count: int) -> None:
        src = self._buf[start : start + count]
        window = dst[at : at + count]
        np.copyto(window, src, casting="unsafe")
        if dst.dtype == np.float32:
            # cast, then scale in place: a mixed-type multiply would allocate a cast buffer
            np.multiply(window, _TO_FLOAT, out=window)

    def skip_to(self, position: int) -> int:
        """Drop queued samples up to ``position`` (never past what was written)."""
        target = min(position, self.write_pos)
        skipped = target - self.read_pos
        if skipped <= 0:
            return 0
        self.read_pos = target
        return skipped


class SharedSampleRing(SampleRing):
    """A :class:`SampleRing` whose samples and positions live in C (``_rt.SourceRing``),
    so the C feeder (:mod:`.fed`) reads it without the GIL.

    The same producer code as :class:`SampleRing`; the positions are the C object's
    atomics (a store here is a release store, a load an acquire load), the samples
    its buffer. The consumer is the C feeder while it runs, else the audio thread's mix.
    """

    def __init__(self, shared: Any, *, name: str = "ring") -> None:
        self.shared = shared
        """The ``_rt.SourceRing`` (the feeder takes it)."""
        super().__init__(
            int(shared.capacity), name=name, samples=np.frombuffer(shared, dtype=np.int16)
        )

    @property
    def write_pos(self) -> int:
        return int(self.shared.write_pos)

    @write_pos.setter
    def write_pos(self, value: int) -> None:
        self.shared.write_pos = value

    @property
    def read_pos(self) -> int:
        return int(self.shared.read_pos)

    @read_pos.setter
    def read_pos(self, value: int) -> None:
        self.shared.read_pos = value

    def mark_end(self) -> None:
        self.shared.end_pos = self.write_pos
        if self.on_write is not None:  # the feeder looks now: a held start plays
            self.on_write()


class FrameRing:
    """Capture frames from the audio thread to asyncio; drops the oldest when full.

    ``slots`` frames of up to ``max_samples`` are preallocated. The producer
    never waits and never looks at the consumer's index: it overwrites. The
    consumer detects what was overwritten (before or while it copied) and
    counts it in :attr:`dropped`, so one slot is kept as a guard and the
    usable depth is ``slots - 1`` frames.
    """

    def __init__(self, slots: int, max_samples: int) -> None:
        if slots < 2:
            raise ValueError(f"capture ring needs at least 2 slots, got {slots}")
        self.slots = slots
        self._data: Int16Array = np.zeros((slots, max_samples), dtype="<i2")
        self._lengths = np.zeros(slots, dtype=np.int64)
        self._rates = np.zeros(slots, dtype=np.int64)
        self._captured = np.zeros(slots, dtype=np.float64)
        self.write_count = 0
        """Frames ever pushed. Only the producer stores to it."""
        self.read_count = 0
        """Frames ever consumed or dropped. Only the consumer stores to it."""
        self.dropped = 0
        """Frames lost because the consumer fell more than ``slots - 1`` behind."""
        self.high_water = 0
        """The most frames the consumer has found waiting (at ``depth`` it starts losing)."""

    @property
    def depth(self) -> int:
        """Frames that are guaranteed to survive until read."""
        return self.slots - 1

    # -- producer side (audio thread) ---------------------------------------

    def push(self, samples: Int16Array, *, rate_hz: int, captured_at: float) -> None:
        """Store one frame (overwriting the oldest unread one if full)."""
        slot = self.write_count % self.slots
        count = len(samples)
        self._data[slot, :count] = samples
        self._lengths[slot] = count
        self._rates[slot] = rate_hz
        self._captured[slot] = captured_at
        self.write_count += 1  # publish after the copy

    # -- consumer side (asyncio) --------------------------------------------

    def queued(self) -> int:
        """Frames waiting to be read (capped at the usable depth)."""
        return min(self.write_count - self.read_count, self.depth)

    def pop(self) -> MicFrame | None:
        """The oldest frame still intact, or None when there is none."""
        while True:
            seq = self.read_count
            behind = self.write_count - seq
            if behind <= 0:
                return None
            if behind > self.high_water:
                self.high_water = min(behind, self.depth)
            if behind >= self.slots:  # overwritten, or being overwritten now
                lost = behind - self.depth
                self.dropped += lost
                self.read_count = seq + lost
                continue
            slot = seq % self.slots
            count = int(self._lengths[slot])
            pcm = self._copy_slot(slot, count)
            rate_hz = int(self._rates[slot])
            captured_at = float(self._captured[slot])
            if self.write_count - seq >= self.slots:  # overwritten while we copied
                continue
            self.read_count = seq + 1
            return MicFrame(pcm=pcm, rate_hz=rate_hz, captured_at=captured_at, seq=seq)

    def _copy_slot(self, slot: int, count: int) -> bytes:
        return self._data[slot, :count].tobytes()  # already little-endian int16: one copy

    def clear(self) -> int:
        """Discard every queued frame (not counted as dropped); return how many."""
        discarded = max(0, min(self.write_count - self.read_count, self.depth))
        self.read_count = self.write_count
        return discarded
