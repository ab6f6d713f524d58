"""Time as an input: fakes of the sleep and clock seams.

- :class:`FakeSleeper` stands in for ``asyncio.sleep`` where a component
  takes an injected ``sleep``: sleeping parks the caller on a
  :class:`~huxleyd.clock.ManualClock` deadline, and :meth:`FakeSleeper.advance`
  moves the clock, waking sleepers in deadline order and letting the loop run
  what they start.
- :class:`InstantSleep` records the delays asked for and returns at once
  (a reconnect schedule read without waiting it out).
- :class:`FakeWallClock` is an aware UTC ``now()`` that moves only when told.
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
