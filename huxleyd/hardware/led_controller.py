"""The LED controller: follows the device's state on the LEDs; every state has an exit.

Layer: asyncio logic over a :class:`~huxleyd.hardware.led_drivers.LedDriver`
(any driver: a fake in tests). The loop calls :meth:`LedController.set_state`
as the coordinator moves and runs :meth:`LedController.run` as a task; it
returns transient states to IDLE when they outlive their limit, so a missed
transition cannot leave the speaker "listening" all night.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from huxleyd.clock import Clock
from huxleyd.hardware.led_drivers import LedDriver
from huxleyd.hardware.led_patterns import (
    DEFAULT_PATTERNS,
    LedPattern,
    LedState,
    PatternKind,
    limits_from_settings,
)
from huxleyd.hardware.settings import LedLimits
from huxleyd.logs import get_logger

log = get_logger("huxleyd.hardware")


@dataclass
class _Current:
    state: LedState
    since_s: float
    expired: int = field(default=0)


class LedController:
    """Follows the coordinator's state on the LEDs; every state has an exit.

    :meth:`set_state` shows the state's pattern at once (setting the same
    state again only restarts its timer: the coordinator is confirming it).
    :meth:`tick` (called by :meth:`run`, or by tests with a ManualClock)
    returns a transient state to IDLE once it has lasted longer than its
    limit and logs ``led_state_expired``; states without a limit (IDLE,
    MEDIA, OFFLINE, MUTED, BOOTING by default) last until told otherwise.
    """

    def __init__(
        self,
        driver: LedDriver,
        clock: Clock,
        *,
        patterns: Mapping[LedState, LedPattern] = DEFAULT_PATTERNS,
        limits_s: Mapping[LedState, float] | None = None,
        initial: LedState = LedState.BOOTING,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        missing = [s.name for s in LedState if s not in patterns]
        if missing:
            raise ValueError(f"no LED pattern for {', '.join(missing)}")
        self._driver = driver
        self._clock = clock
        self._sleep = sleep
        """:meth:`run`'s timer, on the same time as ``clock`` (tests pass a fake of both)."""
        self._patterns = dict(patterns)
        self._limits = dict(limits_from_settings(LedLimits()) if limits_s is None else limits_s)
        self._current = _Current(initial, clock.monotonic())
        self._changed: asyncio.Event | None = None
        self.expired_count = 0
        """How many times the watchdog had to step in (``huxleyctl status`` shows it)."""
        driver.show(self._patterns[initial], self._current.since_s)

    @property
    def state(self) -> LedState:
        return self._current.state

    def set_state(self, state: LedState) -> None:
        """Show ``state`` now. Call from the loop thread."""
        now = self._clock.monotonic()
        previous = self._current.state
        self._current = _Current(state, now)
        if self._changed is not None:
            self._changed.set()  # wake run(): the new pattern may move
        if state is not previous:
            if log.is_enabled_for(logging.DEBUG):
                log.debug("led_state", state=state.value, previous=previous.value)
            self._driver.show(self._patterns[state], now)

    def tick(self) -> LedState:
        """Expire an overdue transient state, advance self-animated drivers; returns the state."""
        now = self._clock.monotonic()
        current = self._current
        limit = self._limits.get(current.state)
        if limit is not None and now - current.since_s > limit:
            self.expired_count += 1
            log.warning(
                "led_state_expired",
                state=current.state.value,
                after_s=round(now - current.since_s, 3),
                limit_s=limit,
            )
            self.set_state(LedState.IDLE)
        self._driver.tick(now)
        return self._current.state

    async def run(self, *, period_s: float = 0.04) -> None:
        """Tick until cancelled: every ``period_s`` (25 Hz, smooth enough for an
        APA102 pulse) while a pattern moves; while it is static (off, solid),
        only at the next state change or when the state's time limit runs out,
        so an idle speaker does not wake the loop 25 times a second."""
        self._changed = asyncio.Event()
        while True:
            state = self.tick()
            if self._patterns[state].kind not in (PatternKind.OFF, PatternKind.SOLID):
                await self._sleep(period_s)
                continue
            limit = self._limits.get(state)
            timeout = None
            if limit is not None:
                timeout = max(period_s, self._current.since_s + limit - self._clock.monotonic())
            self._changed.clear()
            await self._changed_or_after(self._changed, timeout)

    async def _changed_or_after(self, changed: asyncio.Event, after_s: float | None) -> None:
        """Return at the next state change, or after ``after_s`` (on ``sleep``'s time)."""
        waits: set[asyncio.Future[object]] = {asyncio.ensure_future(changed.wait())}
        if after_s is not None:
            waits.add(asyncio.ensure_future(self._sleep(after_s)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def close(self) -> None:
        """Turn the LEDs off and release them. Idempotent."""
        self._driver.close()
