"""Injectable clocks (conventions rule 3, docs/conventions.md: inject the clock).

Everything that measures time takes a :class:`Clock`; production uses
:class:`MonotonicClock`, tests use :class:`ManualClock` and advance it.
Durations are never measured on the wall clock; :class:`WallClockWatch`
only notices when the wall clock is set, and says by how much.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

from huxleyd.logs import EventLogger, get_logger


class Clock(Protocol):
    """A monotonic time source in seconds."""

    def monotonic(self) -> float: ...


class MonotonicClock:
    """The real clock: ``time.monotonic``."""

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to. For deterministic tests."""

    def __init__(self, start_s: float = 0.0) -> None:
        self._now_s = start_s

    def monotonic(self) -> float:
        return self._now_s

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back ({seconds} s)")
        self._now_s += seconds


STEP_THRESHOLD_S = 60.0
"""A wall-clock change this much beyond the time that passed is a step, logged."""


def boottime_s() -> float:
    """CLOCK_BOOTTIME: monotonic, and counting through a suspend."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


class WallClockWatch:
    """Notices the wall clock being set: NTP after boot on a Pi with no RTC (hours),
    an admin's ``date -s``, a VM resumed.

    Each :meth:`check` compares how far the wall clock moved with how far a
    clock no step moves (``steady``) moved since the last check; a difference
    over ``threshold_s`` is logged as ``clock_stepped`` with the step in
    seconds (positive: the clock jumped ahead). NTP's slow slewing is under
    the threshold between two checks, so it never adds up to a false step.
    Durations in the daemon are measured on monotonic clocks and do not move;
    this line is for the reader of the journal (and reminders, which follow
    the wall clock on purpose).
    """

    def __init__(
        self,
        *,
        wall: Callable[[], float] = time.time,
        steady: Callable[[], float] = boottime_s,
        threshold_s: float = STEP_THRESHOLD_S,
        logger: EventLogger | None = None,
    ) -> None:
        self._wall = wall
        self._steady = steady
        self._threshold_s = threshold_s
        self._log = logger or get_logger("huxleyd.clock")
        self._offset_s = wall() - steady()
        self.steps: list[float] = []
        """Every step seen, in seconds (for tests and ``doctor``)."""

    def check(self) -> float | None:
        """The step since the last check, when over the threshold (logged); else None."""
        offset = self._wall() - self._steady()
        step, self._offset_s = offset - self._offset_s, offset
        if abs(step) <= self._threshold_s:
            return None
        self.steps.append(step)
        self._log.warning(
            "clock_stepped",
            step_s=round(step, 1),
            now=datetime.fromtimestamp(self._wall(), UTC).isoformat(timespec="seconds"),
            note="durations (timers, retries) do not move; reminders follow the new time",
        )
        return step

    async def run(
        self,
        *,
        period_s: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Check every ``period_s`` until cancelled."""
        while True:
            await sleep(period_s)
            self.check()
