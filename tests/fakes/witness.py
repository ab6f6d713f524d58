"""Did the machine keep time? A witness thread that any stall of the machine stops too.

This bench runs in a VM: when its host deschedules it, every thread of the guest
stops, a SCHED_FIFO one at priority 50 as much as the engine's callbacks (measured
here: wake-ups 5-24 ms late, dozens a minute, on a loaded host). No code in the
daemon can keep a speaker fed through that, and a Pi has no host. So the rows that
count speaker silences say how many of them fell while the witness, outside the
engine's cgroup and above its priority, was itself held up: those are the
machine's; the rest are the engine's.
"""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType

TICK_NS = 1_000_000
LATE_NS = 3_000_000
"""A wake-up this late (3 ms) is a stall of the machine: more than the witness's own jitter."""
PRIORITY = 50
"""Above the engine's callbacks (SCHED_FIFO 1): only the machine can hold it up."""


class Witness:
    """``with Witness() as w: ...``; then ``w.stalls``: (from, to) monotonic ns spans."""

    def __init__(self) -> None:
        self.stalls: list[tuple[int, int]] = []
        self.realtime = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bench-witness", daemon=True)

    def __enter__(self) -> Witness:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        try:  # this thread only (Linux: 0 is the calling thread)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PRIORITY))
            self.realtime = True
        except (PermissionError, OSError):
            pass  # still a witness, a weaker one: the label says so
        due = time.monotonic_ns() + TICK_NS
        while not self._stop.is_set():
            time.sleep(max(0, due - time.monotonic_ns()) / 1e9)
            now = time.monotonic_ns()
            if now - due > LATE_NS:
                self.stalls.append((due, now))
                due = now
            due += TICK_NS

    def covers(self, start_ns: int, end_ns: int, *, before_ns: int) -> bool:
        """Whether a stall overlaps [start - before, end]: ``before`` is how long the
        card can play on from what was queued (a stall that began then ends in this gap)."""
        return any(a <= end_ns and b >= start_ns - before_ns for a, b in self.stalls)
