"""How the audio thread waits for its next period when no device paces it.

A paced device (a real sound card) makes ``read`` block until a period
exists. A WAV file or a lost device does not, so the thread waits on the
engine's clock instead. :func:`pacer_for` picks the wait that fits the clock:
the real clock sleeps, a :class:`ScaledClock` sleeps ``1/speed`` as long
(scenario tests at 20x), and any other clock (such as
:class:`~huxleyd.clock.ManualClock`) is polled, so a test that advances it
releases exactly the periods it paid for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from huxleyd.clock import Clock, MonotonicClock

Pacer = Callable[[float, threading.Event], None]
"""``wait(deadline_s, stop)``: return at ``deadline_s`` on the clock, or when ``stop`` is set."""

_POLL_S = 0.0005


class ScaledClock:
    """A monotonic clock that runs ``speed`` times faster than real time."""

    def __init__(self, speed: float, *, start_s: float = 0.0) -> None:
        if speed <= 0:
            raise ValueError(f"clock speed must be positive, got {speed}")
        self.speed = speed
        self._start_s = start_s
        self._real0 = time.monotonic()

    def monotonic(self) -> float:
        return self._start_s + (time.monotonic() - self._real0) * self.speed

    def wait_until(self, deadline_s: float, stop: threading.Event) -> None:
        """Sleep (in real time, scaled) until the clock reads ``deadline_s``."""
        remaining = deadline_s - self.monotonic()
        if remaining > 0:
            stop.wait(remaining / self.speed)


def pacer_for(clock: Clock) -> Pacer:
    """The waiting strategy for ``clock`` (chosen once, not per period)."""
    if isinstance(clock, ScaledClock):
        return clock.wait_until
    if isinstance(clock, MonotonicClock):

        def sleep_real(deadline_s: float, stop: threading.Event) -> None:
            remaining = deadline_s - clock.monotonic()
            if remaining > 0:
                stop.wait(remaining)

        return sleep_real

    def poll(deadline_s: float, stop: threading.Event) -> None:
        while clock.monotonic() < deadline_s and not stop.is_set():
            stop.wait(_POLL_S)

    return poll
