"""Time as an input: fakes of the sleep and clock seams.

- :class:`FakeSleeper` stands in for ``asyncio.sleep`` where a component
  takes an injected ``sleep``: sleeping parks the caller on a
  :class:`~huxleyd.clock.ManualClock` deadline, and :meth:`FakeSleeper.advance`
  moves the clock, waking sleepers in deadline order and letting the loop run
  what they start.
- :class:`InstantSleep` records the delays asked for and returns at once
  (a reconnect schedule read without waiting it out).
- :class:`FakeWallClock` is an aware UTC ``now()`` that moves only when told.
- :class:`FakeSystemClock` is a machine's clocks for a timekeeping skill
  (:class:`~huxleyd.skills.skillclock.SkillClock`): time passing moves the
  wall and the steady clock together; a step moves the wall clock only; a
  reboot starts a new boot; the time-sync probe is a flag the test sets.
- :func:`settle` lets every ready task run (no time passes).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from huxleyd.clock import ManualClock

SETTLE_PASSES = 20
"""Loop passes of :func:`settle`: enough for a woken task to post to a queue
and for the queue's consumer to act on it (a handful of hops), deterministic
because nothing else runs."""


async def settle(passes: int = SETTLE_PASSES) -> None:
    """Let every ready task run until the loop has nothing left to do now."""
    for _ in range(passes):
        await asyncio.sleep(0)


class FakeSleeper:
    """``await sleeper.sleep(s)`` waits until the clock has been advanced by ``s``."""

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock()
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self.requested_s: list[float] = []
        """Every duration asked for, in order (tests read backoffs from it)."""

    async def sleep(self, seconds: float) -> None:
        self.requested_s.append(seconds)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        deadline = self.clock.monotonic() + max(0.0, seconds)
        heapq.heappush(self._heap, (deadline, next(self._seq), future))
        await future

    @property
    def pending(self) -> int:
        """Sleepers still waiting (cancelled ones do not count)."""
        return sum(1 for _, _, f in self._heap if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move the clock by ``seconds``, waking each sleeper at its deadline."""
        target = self.clock.monotonic() + seconds
        await settle()
        while self._heap and self._heap[0][0] <= target:
            deadline, _, future = heapq.heappop(self._heap)
            if future.done():
                continue
            self.clock.advance(max(0.0, deadline - self.clock.monotonic()))
            future.set_result(None)
            await settle()
        self.clock.advance(max(0.0, target - self.clock.monotonic()))
        await settle()


class InstantSleep:
    """Records the delays asked for and returns at once (plus an optional hook)."""

    def __init__(self, hook: Callable[[list[float]], Awaitable[None]] | None = None) -> None:
        self.delays: list[float] = []
        self._hook = hook
        self._after: tuple[int, Callable[[], Awaitable[object]]] | None = None

    def after(self, count: int, action: Callable[[], Awaitable[object]]) -> None:
        """Await ``action()`` when the ``count``-th delay is asked for (e.g. a
        connection's ``close``: the test reads the schedule up to there)."""
        self._after = (count, action)

    async def __call__(self, delay_s: float) -> None:
        self.delays.append(delay_s)
        if self._hook is not None:
            await self._hook(self.delays)
        if self._after is not None and len(self.delays) == self._after[0]:
            await self._after[1]()
        await asyncio.sleep(0)


class FakeWallClock:
    """An aware UTC wall clock that moves only when told to."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class FakeSystemClock(FakeWallClock):
    """Wall clock, CLOCK_BOOTTIME, boot id and time-sync probe that move only when told."""

    def __init__(self, start: datetime, *, plausible: bool = True) -> None:
        super().__init__(start)
        self.steady = 1_000.0
        self.boot = "boot-1"
        self.plausible = plausible
        self.steps: list[timedelta] = []

    # -- SkillClock

    def utc_now(self) -> datetime:
        return self.now

    def steady_s(self) -> float:
        return self.steady

    def boot_id(self) -> str:
        return self.boot

    def wall_plausible(self) -> bool:
        return self.plausible

    # -- what happens to the machine

    def advance(self, **delta: float) -> None:
        """Time passes: both clocks move."""
        step = timedelta(**delta)
        self.now += step
        self.steady += step.total_seconds()

    def step(self, **delta: float) -> None:
        """The wall clock is set (NTP, an admin): only it moves, by ``delta``."""
        self.steps.append(timedelta(**delta))
        self.now += timedelta(**delta)

    def reboot(self, *, off_for: timedelta, wall_at_boot: datetime | None = None) -> None:
        """A new boot ``off_for`` later; the wall clock as the RTC-less board has it
        (``wall_at_boot``), else right."""
        self.boot = f"boot-{int(self.boot.split('-')[1]) + 1}"
        self.steady = 5.0
        self.now = wall_at_boot if wall_at_boot is not None else self.now + off_for
