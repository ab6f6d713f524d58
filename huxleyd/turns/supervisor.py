"""Supervised background tasks: the runtime side of ``ctx.background_task``.

Layer: pure asyncio (an injectable clock and sleep; no I/O of its own).

A skill's task runs until it returns (done, no restart), is cancelled, or
fails:

- any exception but ``CancelledError`` (and but one raised while the task's
  cancel is pending: a library that turned the cancel into its own error, which
  ends the task as the cancel would): logged with its traceback and, when
  ``restart_on_crash``, started again from ``coro_factory()`` after a short
  backoff (1, 2, 4 … s, at most :data:`MAX_BACKOFF_S`), as long as fewer
  than ``max_restarts_per_hour`` restarts happened in the last hour;
- :class:`~huxley_sdk.types.StopRetrying` (the skill says "don't
  bother"), a crash with ``restart_on_crash=False``, or a crash once the
  hour's budget is spent: the task stays down and ``on_permanent_failure``
  (sync or async) is called once with a
  :class:`~huxley_sdk.types.PermanentFailure` record, as in Huxley.

How the daemon uses it: one :class:`Supervisor` per daemon; the skill host
binds ``ctx.background_task`` to :meth:`Supervisor.background_task` (with
``skill=<name>`` in the logs via ``owner``); at shutdown ``await
supervisor.close()`` cancels every task and waits for them.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from huxley_sdk.context import CoroFactory
from huxley_sdk.types import BackgroundTaskHandle, PermanentFailure, StopRetrying
from huxleyd.clock import Clock, MonotonicClock
from huxleyd.logs import get_logger
from huxleyd.providers.retry import being_cancelled

log = get_logger("huxleyd.turns")

Sleep = Callable[[float], Awaitable[None]]
OnPermanentFailure = Callable[[PermanentFailure], Awaitable[None] | None]

WINDOW_S = 3600.0
"""The restart budget counts restarts in this sliding window (one hour)."""
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0


class TaskState(enum.Enum):
    RUNNING = "running"
    BACKOFF = "backoff"
    """Crashed; waiting to restart."""
    DONE = "done"
    """Returned normally."""
    FAILED = "failed"
    """Down for good: StopRetrying, no restarts allowed, or budget spent."""
    CANCELLED = "cancelled"


class SupervisedTask:
    """One supervised task with its status for ``huxleyctl``; skills get :attr:`handle`."""

    def __init__(
        self,
        name: str,
        factory: CoroFactory,
        *,
        restart_on_crash: bool,
        max_restarts_per_hour: int,
        on_permanent_failure: OnPermanentFailure | None,
        clock: Clock,
        sleep: Sleep,
        owner: str | None,
    ) -> None:
        self._name = name
        self._factory = factory
        self._restart_on_crash = restart_on_crash
        self._budget = max_restarts_per_hour
        self._on_permanent_failure = on_permanent_failure
        self._clock = clock
        self._sleep = sleep
        self.owner = owner
        self._log = log.bind(task=name, skill=owner) if owner else log.bind(task=name)
        self._restart_times: deque[float] = deque()
        self.state = TaskState.RUNNING
        self.restarts = 0
        """Restarts since the task was started (all time)."""
        self.last_error: BaseException | None = None
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=name)

    @property
    def name(self) -> str:
        return self._name

    def cancel(self) -> None:
        """Stop the task; no restart follows. Idempotent."""
        if not self._task.done():
            self._task.cancel()

    def done(self) -> bool:
        return self._task.done()

    @property
    def handle(self) -> BackgroundTaskHandle:
        """The SDK's handle on this task, what ``ctx.background_task`` returns."""
        return BackgroundTaskHandle(name=self._name, _cancel=self.cancel, _done=self.done)

    async def wait(self) -> None:
        """Return once the task is finished for good (done, failed or cancelled)."""
        await asyncio.wait({self._task})

    async def _supervise(self) -> None:
        self._log.info("background_task_started")
        try:
            while True:
                self.state = TaskState.RUNNING
                try:
                    await self._factory()
                except StopRetrying as exc:
                    self._log.warning("background_task_permanent_failure", error=repr(exc))
                    await self._give_up(exc)
                    return
                except Exception as exc:
                    if being_cancelled():  # the cancel, raised as the body's own error
                        raise asyncio.CancelledError from exc
                    self.last_error = exc
                    self._log.exception("background_task_crashed", error=repr(exc))
                    delay_s = self._next_restart_delay()
                    if delay_s is None:
                        await self._give_up(exc)
                        return
                    self.state = TaskState.BACKOFF
                    self._log.info(
                        "background_task_restarting",
                        delay_s=delay_s,
                        restarts_last_hour=len(self._restart_times),
                        budget=self._budget,
                    )
                    await self._sleep(delay_s)
                    self.restarts += 1
                else:
                    self.state = TaskState.DONE
                    self._log.info("background_task_done", restarts=self.restarts)
                    return
        except asyncio.CancelledError:
            if self.state is not TaskState.FAILED:
                self.state = TaskState.CANCELLED
                self._log.info("background_task_cancelled")
            raise

    def _next_restart_delay(self) -> float | None:
        """Seconds until the restart, or None when no restart may follow."""
        if not self._restart_on_crash:
            return None
        now = self._clock.monotonic()
        while self._restart_times and now - self._restart_times[0] >= WINDOW_S:
            self._restart_times.popleft()
        if len(self._restart_times) >= self._budget:
            return None
        self._restart_times.append(now)
        # Back off harder the more it crashed this hour; the budget bounds the total.
        return min(FIRST_BACKOFF_S * 2.0 ** (len(self._restart_times) - 1), MAX_BACKOFF_S)

    async def _give_up(self, exc: BaseException) -> None:
        self.state = TaskState.FAILED
        self.last_error = exc
        self._log.error(
            "background_task_gave_up",
            error=repr(exc),
            restarts_last_hour=len(self._restart_times),
            budget=self._budget,
            restart_on_crash=self._restart_on_crash,
        )
        if self._on_permanent_failure is None:
            return
        now = self._clock.monotonic()
        record = PermanentFailure(
            name=self._name,
            last_exception_class=type(exc).__name__,
            last_exception_message=str(exc),
            restart_count=self.restarts,
            elapsed_in_window_s=now - self._restart_times[0] if self._restart_times else 0.0,
        )
        try:
            result = self._on_permanent_failure(record)
            if inspect.isawaitable(result):
                await result
        except Exception:
            self._log.exception("background_task_failure_callback_failed")


class Supervisor:
    """Starts and owns every supervised background task of the daemon."""

    def __init__(self, *, clock: Clock | None = None, sleep: Sleep = asyncio.sleep) -> None:
        self._clock = clock or MonotonicClock()
        self._sleep = sleep
        self._tasks: set[SupervisedTask] = set()
        self._closed = False

    def background_task(
        self,
        name: str,
        coro_factory: CoroFactory,
        *,
        restart_on_crash: bool = True,
        max_restarts_per_hour: int = 10,
        on_permanent_failure: OnPermanentFailure | None = None,
        owner: str | None = None,
    ) -> SupervisedTask:
        """Start ``coro_factory()`` now, supervised. Call on the loop thread.

        ``owner`` (not part of the SDK signature) is the skill name for the logs.
        """
        if self._closed:
            raise RuntimeError(f"background_task {name!r}: the supervisor is shut down")
        factory: object = coro_factory  # typed callable, but skills pass coroutines by mistake
        if not callable(factory):
            if inspect.iscoroutine(factory):
                factory.close()  # spare the "never awaited" warning; the error says why
            raise TypeError(
                f"background_task {name!r}: coro_factory must be a callable returning a "
                f"coroutine (pass the function, not its call), got {coro_factory!r}"
            )
        if isinstance(max_restarts_per_hour, bool) or not isinstance(max_restarts_per_hour, int):
            raise TypeError(
                f"background_task {name!r}: max_restarts_per_hour must be an int, "
                f"got {max_restarts_per_hour!r}"
            )
        if max_restarts_per_hour < 0:
            raise ValueError(
                f"background_task {name!r}: max_restarts_per_hour must be >= 0, "
                f"got {max_restarts_per_hour}"
            )
        task = SupervisedTask(
            name,
            coro_factory,
            restart_on_crash=restart_on_crash,
            max_restarts_per_hour=max_restarts_per_hour,
            on_permanent_failure=on_permanent_failure,
            clock=self._clock,
            sleep=self._sleep,
            owner=owner,
        )
        self._tasks.add(task)
        task._task.add_done_callback(lambda _t: self._tasks.discard(task))
        return task

    def cancel_owner(self, owner: str) -> None:
        """Stop every task ``owner`` started (a skill left out after a failed setup)."""
        for task in list(self._tasks):
            if task.owner == owner:
                task.cancel()

    def tasks(self) -> tuple[SupervisedTask, ...]:
        """The tasks not finished yet, by name (for status)."""
        return tuple(sorted(self._tasks, key=lambda t: t.name))

    async def close(self) -> None:
        """Cancel every task and wait for them. Later background_task calls fail."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        results: list[Any] = await asyncio.gather(*(t._task for t in tasks), return_exceptions=True)
        for task, result in zip(tasks, results, strict=True):
            if isinstance(result, Exception):  # _supervise catches them: a bug if seen
                log.error("background_task_close_error", task=task.name, error=repr(result))
