"""The SPSC rings: order, bounds, drop policy, and wake-ups that are never lost."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.audio.ring import AsyncWaker, FrameRing, SampleRing


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(1, 64),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 80)), max_size=60),
)
def test_sample_ring_is_a_bounded_fifo(capacity: int, ops: list[tuple[bool, int]]) -> None:
    ring = SampleRing(capacity)
    model: list[int] = []
    counter = 0
    for is_write, size in ops:
        if is_write:
            data = np.arange(counter, counter + size, dtype=np.int16)
            written = ring.write(data)
            assert written == min(size, capacity - len(model))
            model.extend(int(v) for v in data[:written])
            counter += written
        else:
            out = np.full(size + 3, -1, dtype=np.int16)
            got = ring.read_into(out, 3, size)
            assert got == min(size, len(model))
            assert list(out[3 : 3 + got]) == model[:got]
            assert list(out[:3]) == [-1, -1, -1]  # nothing outside the window is touched
            del model[:got]
        assert ring.available() == len(model)
        assert 0 <= ring.free() <= capacity


def test_sample_ring_float_reads_are_scaled_to_full_scale() -> None:
    ring = SampleRing(8)
    ring.write(np.array([16384, -32768, 32767], dtype=np.int16))
    out = np.zeros(3, dtype=np.float32)
    assert ring.read_into(out, 0, 3) == 3
    assert out.tolist() == pytest.approx([0.5, -1.0, 32767 / 32768])


def test_skip_to_drops_queued_samples_but_never_unwritten_ones() -> None:
    ring = SampleRing(16)
    ring.write(np.arange(10, dtype=np.int16))
    assert ring.skip_to(4) == 4
    assert ring.skip_to(100) == 6  # clamped to what was written
    assert ring.read_pos == ring.write_pos == 10
    assert ring.skip_to(3) == 0  # never backwards


def test_frame_ring_delivers_in_order_with_metadata() -> None:
    ring = FrameRing(4, 8)
    for i in range(3):
        ring.push(np.full(8, i, dtype=np.int16), rate_hz=24000, captured_at=i * 0.02)
    frames = [ring.pop() for _ in range(3)]
    assert [f.seq for f in frames if f] == [0, 1, 2]
    assert [f.captured_at for f in frames if f] == pytest.approx([0.0, 0.02, 0.04])
    assert frames[2] is not None and np.frombuffer(frames[2].pcm, "<i2").tolist() == [2] * 8
    assert ring.pop() is None
    assert ring.dropped == 0


def test_frame_ring_drops_the_oldest_and_counts_them() -> None:
    ring = FrameRing(4, 2)  # usable depth 3
    for i in range(10):
        ring.push(np.array([i, i], dtype=np.int16), rate_hz=16000, captured_at=float(i))
    seqs = []
    while (frame := ring.pop()) is not None:
        seqs.append(frame.seq)
    assert seqs == [7, 8, 9]  # the newest survive
    assert ring.dropped == 7
    assert ring.pop() is None


def test_frame_ring_detects_a_frame_overwritten_while_it_was_copied() -> None:
    class RacingRing(FrameRing):
        """The producer laps the consumer during its first copy."""

        raced = False

        def _copy_slot(self, slot: int, count: int) -> bytes:
            pcm = super()._copy_slot(slot, count)
            if not self.raced:
                self.raced = True
                for i in range(3):
                    self.push(np.array([9, 9], dtype=np.int16), rate_hz=24000, captured_at=1.0 + i)
            return pcm

    ring = RacingRing(3, 2)
    ring.push(np.array([1, 1], dtype=np.int16), rate_hz=24000, captured_at=0.0)
    frame = ring.pop()
    # frame 0 was torn, frame 1 overwritten: the consumer resumes at the oldest intact one
    assert frame is not None and frame.seq == 2 and frame.captured_at == 2.0
    assert np.frombuffer(frame.pcm, "<i2").tolist() == [9, 9]
    assert ring.dropped == 2


def test_frame_ring_clear_discards_without_counting_drops() -> None:
    ring = FrameRing(8, 2)
    for i in range(5):
        ring.push(np.zeros(2, dtype=np.int16), rate_hz=24000, captured_at=float(i))
    assert ring.clear() == 5
    assert ring.pop() is None and ring.dropped == 0
    ring.push(np.zeros(2, dtype=np.int16), rate_hz=24000, captured_at=9.0)
    frame = ring.pop()
    assert frame is not None and frame.seq == 5


async def test_waker_wakes_a_waiter_from_another_thread() -> None:
    waker = AsyncWaker()
    box: list[int] = []

    def producer() -> None:
        for i in range(200):
            box.append(i)
            waker.notify()

    thread = threading.Thread(target=producer)
    seen = 0
    thread.start()
    while seen < 200:

        def more(already: int = seen) -> bool:
            return len(box) > already

        assert await asyncio.wait_for(waker.wait_for(more), timeout=5)
        seen = len(box)
    thread.join()


async def test_waker_close_releases_waiters_with_false() -> None:
    waker = AsyncWaker()
    task = asyncio.ensure_future(waker.wait_for(lambda: False))
    await asyncio.sleep(0)
    waker.close()
    assert await asyncio.wait_for(task, timeout=1) is False
    assert await waker.wait_for(lambda: False) is False
