"""Injectable clocks (STYLE.md rule 3: inject the clock).

Everything that measures time takes a :class:`Clock`; production uses
:class:`MonotonicClock`, tests use :class:`ManualClock` and advance it.
"""

from __future__ import annotations

import time
from typing import Protocol


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
