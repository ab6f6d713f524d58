"""Tests of huxleyd.turns, plus the virtual timeline its timer tests share.

:class:`FakeSleeper` stands in for ``asyncio.sleep`` where a component takes
an injected ``sleep``: sleeping parks the caller on a :class:`ManualClock`
deadline, and :meth:`FakeSleeper.advance` moves the clock, waking sleepers in
deadline order and letting the loop run what they start.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable

from huxleyd.clock import ManualClock

_SETTLE_PASSES = 20
"""Loop passes after each wake-up: enough for a woken task to post to a queue
and for the queue's consumer to act on it (a handful of hops), deterministic
because nothing else runs."""


async def eventually(check: Callable[[], object], what: str, *, safety_s: float = 30.0) -> None:
    """Return as soon as ``check()`` is true. For waits on real timers (a tool's
    timeout): the test waits for the outcome, not for a guessed duration, and
    the generous ``safety_s`` only turns a hang into a failure."""
    deadline = time.monotonic() + safety_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {safety_s:g} s waiting for {what}")
        await asyncio.sleep(0.005)


async def settle() -> None:
    """Let every ready task run until the loop has nothing left to do now."""
    for _ in range(_SETTLE_PASSES):
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
