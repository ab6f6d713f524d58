"""The simulators send audio ahead of real time, as the real services do."""

from __future__ import annotations

import math

from huxleyd.sim.pacing import AHEAD_MS, AudioPacer


class Clock:
    """A monotonic clock that moves when slept on, plus a lateness per wake-up."""

    def __init__(self, late_s: float = 0.0) -> None:
        self.now = 100.0
        self.late_s = late_s
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds + (self.late_s if seconds > 0 else 0.0)


async def test_the_first_half_second_goes_out_at_once_then_real_time() -> None:
    clock = Clock()
    pacer = AudioPacer(1.0, monotonic=clock.monotonic, sleep=clock.sleep)
    for _ in range(int(AHEAD_MS // 40)):
        await pacer.sent(40)
    assert clock.now == 100.0  # 480 ms sent, no time passed: ahead, as a service sends
    sent_ms = 480
    for _ in range(50):  # 2 s more, 40 ms chunks: from now on exactly the lead ahead
        await pacer.sent(40)
        sent_ms += 40
        ahead_ms = sent_ms - (clock.now - 100.0) * 1000
        assert abs(ahead_ms - AHEAD_MS) < 1e-6


async def test_late_wake_ups_do_not_accumulate() -> None:
    """Each wake-up 5 ms late (a busy loop): the schedule is absolute, so the lead
    holds; sleeping a chunk's length per chunk fell 5 ms further behind each time."""
    clock = Clock(late_s=0.005)
    pacer = AudioPacer(1.0, monotonic=clock.monotonic, sleep=clock.sleep)
    for _ in range(200):  # 8 s of 40 ms chunks
        await pacer.sent(40)
    sent_ms = 200 * 40
    played_ms = (clock.now - 100.0) * 1000
    assert sent_ms - played_ms >= AHEAD_MS - 40 - 5  # still ahead by the lead


async def test_no_pacing_only_yields() -> None:
    clock = Clock()
    pacer = AudioPacer(math.inf, monotonic=clock.monotonic, sleep=clock.sleep)
    for _ in range(100):
        await pacer.sent(40)
    assert clock.now == 100.0 and clock.slept == [0] * 100
