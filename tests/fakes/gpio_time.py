"""gpiozero's animation time, stepped by the test instead of the wall clock.

gpiozero animates ``blink``/``pulse`` on a thread of its own that sleeps in
``GPIOThread.stopping.wait(delay)``, and ``MockPin`` stamps every state change
with ``time.monotonic()``. On a loaded machine both drift by whatever the
scheduler adds, so a timeline checked against the wall clock goes red under
load. :class:`SteppedTime` replaces the two (the thread's ``stopping`` event
and the mock pins' ``monotonic``) with one virtual clock: the animation
thread blocks until the test calls :meth:`SteppedTime.step`, which moves the
clock to that thread's deadline and waits until the thread has written its
next state and gone back to sleep. The pin timeline is then exact, whatever
the load; gpiozero's own LED code is what runs.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

GUARD_S = 60.0
"""How long :meth:`SteppedTime.step` waits for the animation thread to reach
its next sleep before failing: a hang guard, never a verdict on timing."""


class SteppedTime:
    """A virtual clock shared by gpiozero's animation threads and mock pins."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cond = threading.Condition()
        self.sleepers: dict[int, float] = {}
        """Token -> deadline, for each animation thread blocked in ``wait``."""
        self._tokens = itertools.count()

    def monotonic(self) -> float:
        with self.cond:
            return self.now

    def sleep_until(self, event: SteppedEvent, timeout: float) -> bool:
        """``event.wait(timeout)`` on this clock (called with ``cond`` held)."""
        deadline = self.now + timeout
        token = next(self._tokens)
        self.sleepers[token] = deadline
        self.cond.notify_all()
        try:
            self.cond.wait_for(lambda: event.flag or self.now >= deadline)
        finally:
            del self.sleepers[token]
            self.cond.notify_all()
        return event.flag

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass while nothing animates (a solid LED between states)."""
        with self.cond:
            target = self.now + seconds
            if any(deadline <= target for deadline in self.sleepers.values()):
                raise AssertionError("an animation is due before that: step() it instead")
            self.now = target

    def step(self) -> float:
        """Wake the animation thread at its deadline; return once it sleeps again.

        Returns the new time. Fails if no thread reaches a sleep within
        :data:`GUARD_S` (nothing is animating, or the thread died).
        """
        with self.cond:
            if not self.cond.wait_for(lambda: self.sleepers, timeout=GUARD_S):
                raise AssertionError("no gpiozero animation thread is waiting to be stepped")
            token, deadline = min(self.sleepers.items(), key=lambda item: item[1])
            self.now = max(self.now, deadline)
            self.cond.notify_all()
            asleep_again = self.cond.wait_for(
                lambda: token not in self.sleepers and bool(self.sleepers), timeout=GUARD_S
            )
            if not asleep_again:
                raise AssertionError("the gpiozero animation thread did not sleep again")
            return self.now


class SteppedEvent:
    """The ``threading.Event`` gpiozero's ``GPIOThread`` stops on, on :class:`SteppedTime`."""

    def __init__(self, time: SteppedTime) -> None:
        self._time = time
        self.flag = False

    def is_set(self) -> bool:
        return self.flag

    def set(self) -> None:
        with self._time.cond:
            self.flag = True
            self._time.cond.notify_all()

    def clear(self) -> None:
        with self._time.cond:
            self.flag = False

    def wait(self, timeout: float | None = None) -> bool:
        with self._time.cond:
            if timeout is None:
                self._time.cond.wait_for(lambda: self.flag)
                return True
            return self._time.sleep_until(self, timeout)


def stepped_thread_class(time: SteppedTime, base: Any) -> Any:
    """A subclass of gpiozero's ``GPIOThread`` (``base``) whose ``stopping`` runs on ``time``."""

    class SteppedThread(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.stopping = SteppedEvent(time)

    return SteppedThread
