"""The reply watchdog: a reply was asked for and nothing came, or it stopped mid-way.

Armed when a response is requested (nothing comes: *silent*, retry) and
re-armed by every audio chunk and tool call of the reply (it stops and never
ends: *stale*); disarmed when the response ends. A provider that silently
dropped a ``response.create`` would otherwise leave the user waiting forever.

Arming happens for every audio chunk (tens per second), so arming is cheap:
it moves one deadline. One timer task, started on the first arm and living
until :meth:`SilenceWatchdog.close`, sleeps until the deadline; when it wakes
and the deadline moved meanwhile it sleeps the difference, else it fires.
Since every arm sets ``now + timeout``, the deadline only ever moves later,
so the task never sleeps past it. Time is the injected clock and sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from huxleyd.clock import Clock, MonotonicClock
from huxleyd.logs import get_logger

log = get_logger("huxleyd.turns")


class SilenceWatchdog:
    """One deadline at a time; arming again moves it to ``now + timeout_s``.

    Call :meth:`arm` / :meth:`disarm` on the loop thread; :meth:`close` at shutdown.
    """

    def __init__(
        self,
        timeout_s: float,
        *,
        clock: Clock | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.timeout_s = timeout_s
        self._clock = clock or MonotonicClock()
        self._sleep = sleep
        self._deadline: float | None = None
        self._on_expiry: Callable[[], None] | None = None
        self._moves = 0
        """Arms and disarms so far: the timer task tells a moved deadline by it."""
        self._armed_event = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None

    @property
    def armed(self) -> bool:
        return self._deadline is not None

    @property
    def deadline(self) -> float | None:
        """When it fires, on the injected clock (None: disarmed)."""
        return self._deadline

    def arm(self, on_expiry: Callable[[], None]) -> None:
        """Call ``on_expiry`` ``timeout_s`` from now, unless armed again or disarmed first."""
        self._deadline = self._clock.monotonic() + self.timeout_s
        self._on_expiry = on_expiry
        self._moves += 1
        self._armed_event.set()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._run(), name="reply-watchdog")

    def disarm(self) -> None:
        self._deadline = None
        self._on_expiry = None
        self._moves += 1
        self._armed_event.clear()

    async def close(self) -> None:
        """Disarm and stop the timer task (idempotent)."""
        self.disarm()
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            try:
                await timer
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise

    async def _run(self) -> None:
        while True:
            await self._armed_event.wait()
            moves, deadline = self._moves, self._deadline
            if deadline is None:  # pragma: no cover - disarm clears the event
                continue
            await self._sleep(max(0.0, deadline - self._clock.monotonic()))
            if moves != self._moves:
                continue  # moved (or disarmed) while asleep: sleep to the new one
            on_expiry = self._on_expiry
            self.disarm()
            if on_expiry is not None:
                try:
                    on_expiry()
                except Exception as exc:  # the watchdog must outlive a faulty handler
                    log.error("watchdog_handler_failed", error=repr(exc))
