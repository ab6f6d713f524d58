"""The event loop, watched: stalls and the deaths of tasks nobody awaits.

Layer: wiring (asyncio only). Installed once on the daemon's loop
(:meth:`LoopWatch.install`), it does two things:

- **Stalls.** A timer on the loop itself (no thread: nothing else takes
  the GIL) asks to run every :data:`TICK_S` while audio flows
  (:meth:`LoopWatch.set_active`: a turn, media, a call) and every
  :data:`IDLE_TICK_S` while the device is quiet; when it runs more than
  :data:`STALL_S` late, something blocked the loop that long. Every task's
  steps are timed (the task factory wraps its coroutine in :class:`_Timed`:
  two clock reads a step), so the line names the task whose step was the
  slowest since the last tick, and the skill it belongs to. ``loop_stalled``
  is logged at most once per :data:`LOG_EVERY_S` (the rest counted), and
  ``doctor`` shows the worst stall since the start.
- **Deaths.** A task created by a skill's own code (``asyncio.create_task``
  in a skill, not ``ctx.background_task``, which is supervised and
  restarted) that ends with an exception is logged at once,
  ``skill_task_died`` with the skill and the task's name, instead of
  asyncio's "Task exception was never retrieved" at shutdown with neither.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
from collections.abc import Callable, Coroutine, Generator, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from huxleyd.clock import Clock, MonotonicClock
from huxleyd.logs import get_logger

log = get_logger("huxleyd.daemon")

TICK_S = 0.05
"""While audio flows: a stall then is heard (the mic's frames, the reply's
audio wait on the loop), and a callback outside any task that blocks is
seen only if it holds up a tick, so ticks come often."""
IDLE_TICK_S = 1.0
"""While the device is quiet (idle, muted, offline): nothing waits on the loop
to be heard, and the fast tick was the idle loop's only regular wakeup (20 a
second, issue 39: the idle daemon's cost against aplay + arecord). Every
task's steps are still timed, and a long one pulls the tick in at once
(:meth:`LoopWatch.stepped`), so a task's stall is reported as before. What a
slow tick can miss is a callback outside any task (a protocol's
``data_received``, a ``call_soon``) blocking for less than a second while
quiet: nothing is being heard then, and once audio flows the fast tick
catches such a callback as before."""
STALL_S = 0.1
"""A step longer than this blocked everything else: the mic, the control socket."""
LOG_EVERY_S = 10.0
HOST_TASK_PREFIX = "skill-"
"""Tasks the skill host runs a tool or a setup in: it awaits them and logs their end."""

OwnerOf = Callable[[Coroutine[Any, Any, Any]], str | None]
"""The skill a coroutine's code belongs to, or None (huxleyd's own)."""


class Timers(Protocol):
    """What schedules the tick and tells how late it ran: the event loop itself
    (tests pass their own). Lateness is read on the clock the timer runs on, not
    the injected :class:`Clock`, which may run at another pace (a scaled clock)."""

    def time(self) -> float: ...
    def call_later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle: ...


@dataclass(frozen=True, slots=True)
class Stall:
    late_s: float
    task: str
    """The slowest step's task since the last tick ('' when no task stepped long)."""
    skill: str | None

    def describe(self) -> str:
        who = f"task {self.task}" if self.task else "a callback outside any task"
        if self.skill:
            who += f" (skill {self.skill})"
        return f"{self.late_s * 1000:.0f} ms in {who}"


class _Timed(Coroutine[Any, Any, Any]):
    """A coroutine that reports how long each of its steps ran."""

    __slots__ = ("_coro", "_watch", "task")

    def __init__(self, coro: Coroutine[Any, Any, Any], watch: LoopWatch) -> None:
        self._coro = coro
        self._watch = watch
        self.task: asyncio.Task[Any] | None = None

    def send(self, value: Any) -> Any:
        start = self._watch.clock.monotonic()
        try:
            return self._coro.send(value)
        finally:
            self._watch.stepped(self, self._watch.clock.monotonic() - start)

    def throw(self, *args: Any) -> Any:
        start = self._watch.clock.monotonic()
        try:
            return self._coro.throw(*args)
        finally:
            self._watch.stepped(self, self._watch.clock.monotonic() - start)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coro.__await__()

    @property
    def inner(self) -> Coroutine[Any, Any, Any]:
        return self._coro

    def __repr__(self) -> str:
        return repr(self._coro)


class LoopWatch:
    """See the module docstring. ``owner_of`` may be set once the skills are loaded;
    ``timers`` schedule the tick (the loop's own when None). ``clock`` times the
    tasks' steps and the log's rate limit."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        owner_of: OwnerOf | None = None,
        timers: Timers | None = None,
    ) -> None:
        self.clock = clock or MonotonicClock()
        self.owner_of: OwnerOf = owner_of or (lambda _coro: None)
        self._timers = timers
        self.armed = False
        self.active = False
        """Audio flows (:meth:`set_active`): tick every :data:`TICK_S`, else :data:`IDLE_TICK_S`."""
        self.worst: Stall | None = None
        self.stalls = 0
        self._slowest: tuple[float, _Timed] | None = None
        self._next_log_at: dict[str, float] = {}
        """Task name → when its next stall may be logged."""
        self._unlogged = 0
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        loop.set_task_factory(self._task_factory)
        self._schedule()

    def uninstall(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._loop is not None:
            self._loop.set_task_factory(None)

    # -- tasks

    def _task_factory(
        self,
        loop: asyncio.AbstractEventLoop,
        coro: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[Any]:
        if not asyncio.iscoroutine(coro) or isinstance(coro, _Timed):
            return asyncio.Task(coro, loop=loop, context=context)
        timed = _Timed(coro, self)
        task: asyncio.Task[Any] = asyncio.Task(timed, loop=loop, context=context)
        timed.task = task
        skill = self.owner_of(coro)
        if skill is not None:
            task.add_done_callback(lambda t: self._skill_task_done(t, skill))
        return task

    def _skill_task_done(self, task: asyncio.Task[Any], skill: str) -> None:
        if task.cancelled() or task.get_name().startswith(HOST_TASK_PREFIX):
            return
        exc = task.exception()  # retrieved: no "never retrieved" at shutdown
        if exc is None:
            return
        log.error(
            "skill_task_died",
            skill=skill,
            task=task.get_name(),
            error=repr(exc),
            effect="not restarted: a task started with ctx.background_task would be",
            exc_info=(type(exc), exc, exc.__traceback__),
        )

    # -- stalls

    def stepped(self, timed: _Timed, took_s: float) -> None:
        if took_s > STALL_S and (self._slowest is None or took_s > self._slowest[0]):
            self._slowest = (took_s, timed)
            if not self.active:  # quiet: report it now, not up to IDLE_TICK_S later
                self._reschedule(0.0)

    def set_active(self, active: bool) -> None:
        """Whether audio flows (the runtime calls it on each change of activity).
        Becoming active brings a pending slow tick in to :data:`TICK_S`; becoming
        quiet lets the pending fast tick run, and the next one comes slowly."""
        if active == self.active:
            return
        self.active = active
        if active:
            self._reschedule(TICK_S)

    @property
    def tick_s(self) -> float:
        """The period the next tick is scheduled at."""
        return TICK_S if self.active else IDLE_TICK_S

    def _reschedule(self, delay_s: float) -> None:
        if self._timer is None:
            return  # not installed (or uninstalled): nothing ticks
        self._timer.cancel()
        self._schedule(delay_s)

    def _schedule(self, delay_s: float | None = None) -> None:
        assert self._loop is not None
        delay_s = self.tick_s if delay_s is None else delay_s
        timers = self._timers or self._loop
        self._due = timers.time() + delay_s
        self._timer = timers.call_later(delay_s, self._tick)

    def arm(self) -> None:
        """Count stalls from now: the start (imports, opening devices) blocks by design."""
        self.armed = True

    def _tick(self) -> None:
        assert self._loop is not None
        late_s = (self._timers or self._loop).time() - self._due
        slowest, self._slowest = self._slowest, None
        self._schedule()
        if not self.armed or (late_s <= STALL_S and slowest is None):
            return
        if slowest is not None:
            late_s = max(late_s, slowest[0])
        stall = self._stall(late_s, slowest[1] if slowest is not None else None)
        self.stalls += 1
        if self.worst is None or stall.late_s > self.worst.late_s:
            self.worst = stall
        now = self.clock.monotonic()
        # Per task: a tool that blocks is not hidden by a slow start a moment before.
        self._next_log_at = {k: t for k, t in self._next_log_at.items() if t > now}
        if stall.task in self._next_log_at:
            self._unlogged += 1
            return
        self._next_log_at[stall.task] = now + LOG_EVERY_S
        log.warning(
            "loop_stalled",
            ms=round(stall.late_s * 1000),
            task=stall.task or "none",
            skill=stall.skill or "",
            not_logged_since_last=self._unlogged,
        )
        self._unlogged = 0

    def _stall(self, late_s: float, timed: _Timed | None) -> Stall:
        if timed is None or timed.task is None:
            return Stall(late_s, "", None)
        name = timed.task.get_name()
        skill = self.owner_of(timed.inner)
        if skill is None and ":" in name:  # a supervised task: "<skill>:<name>"
            skill = name.split(":", 1)[0]
        return Stall(late_s, name, skill)

    def summary(self) -> str:
        """For doctor: the worst stall since the start."""
        if self.worst is None:
            return f"no stall over {STALL_S * 1000:.0f} ms since the start"
        return (
            f"worst stall {self.worst.describe()}; "
            f"{self.stalls} stall(s) over {STALL_S * 1000:.0f} ms since the start"
        )


def skill_files(skills: Iterable[object]) -> OwnerOf:
    """:data:`OwnerOf` by where a coroutine's code lives: a skill's module file,
    or anywhere under its package's directory."""
    roots: list[tuple[str, str]] = []
    for skill in skills:
        module = sys.modules.get(type(skill).__module__)
        name = getattr(skill, "name", None)
        if module is None or not isinstance(name, str):
            continue
        paths = getattr(module, "__path__", None)
        if paths:
            roots.extend((os.path.join(p, ""), name) for p in paths)
        elif getattr(module, "__file__", None):
            roots.append((str(module.__file__), name))
    cache: dict[str, str | None] = {}

    def owner_of(coro: Coroutine[Any, Any, Any]) -> str | None:
        code = getattr(coro, "cr_code", None)
        if code is None:
            return None
        file = code.co_filename
        if file not in cache:
            cache[file] = next((n for root, n in roots if file.startswith(root)), None)
        return cache[file]

    return owner_of
