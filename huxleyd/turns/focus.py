"""The focus manager: who owns the speaker, and how the others behave.

Layer: pure asyncio logic (no audio, no sockets). The model is Huxley's,
after Alexa AVS: four channels, lower number wins.

========  =====  ==========================================================
channel   prio   used for
========  =====  ==========================================================
DIALOG    100    listening (PTT held) and the model speaking
COMMS     150    an input claim (call, intercom, voice memo)
ALERT     200    a timer/reminder earcon or alarm
CONTENT   300    an AudioStream (book, radio)
========  =====  ==========================================================

One channel holds at most one :class:`Activity`. The activity on the
highest-priority occupied channel is FOREGROUND with PRIMARY mixing; every
other one is BACKGROUND with MAY_DUCK (``ContentType.MIXABLE``: keep playing,
quieter) or MUST_PAUSE (``NONMIXABLE``: stop advancing, resume at the same
sample when foreground again). An activity told NONE/MUST_STOP is gone: stop
it and forget it.

Patience: while an activity is BACKGROUND its patience runs (its own
``patience``, else 0 for NONMIXABLE and 5 minutes for MIXABLE). Foreground
again before it runs out: nothing happens. Run out: ``on_patience_expired``
is awaited, then the activity is told NONE/MUST_STOP and removed. Patience
0 evicts at once, inside the same request, so ``acquire`` returns with the
preempted activity already gone.

One actor owns the state: :meth:`FocusManager.acquire`, :meth:`release`,
:meth:`stop_all` put a request on a queue that a single task processes in
order, so transitions never race. Observers are called from that task,
losers first (NONE, then BACKGROUND), the new foreground last.

How the coordinator uses it::

    focus = FocusManager()          # sleep= injectable for tests
    focus.start()                   # on the loop; or ``async with focus:``
    listening = Activity("listening", Channel.DIALOG, on_focus_changed=cb)
    await focus.acquire(listening)  # PTT pressed
    await focus.release(listening)  # turn over
    ...
    await focus.stop_all(); await focus.close()   # shutdown

``on_focus_changed(state, behavior)`` may be sync or async; map it to the
mixer: MAY_DUCK → ``duck(source)``, PRIMARY after MAY_DUCK → ``unduck``,
MUST_PAUSE → ``pause``, PRIMARY after MUST_PAUSE → ``resume``, MUST_STOP →
stop the media task. Callbacks must not ``await`` a focus request (the
actor would wait on itself; it raises RuntimeError instead): start a task
if one must follow. A callback that raises is logged and the transition
stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from types import TracebackType
from typing import Any

from huxley_sdk.types import ContentType
from huxleyd.logs import get_logger

log = get_logger("huxleyd.turns")

Sleep = Callable[[float], Awaitable[None]]


class Channel(enum.IntEnum):
    """Focus channels; the lower value wins."""

    DIALOG = 100
    COMMS = 150
    ALERT = 200
    CONTENT = 300


class FocusState(enum.Enum):
    FOREGROUND = "foreground"
    BACKGROUND = "background"
    NONE = "none"


class MixingBehavior(enum.Enum):
    PRIMARY = "primary"
    """Foreground: play normally."""
    MAY_DUCK = "may_duck"
    """Background, MIXABLE: keep playing at the ducked gain."""
    MUST_PAUSE = "must_pause"
    """Background, NONMIXABLE: hold position; resume there when PRIMARY again."""
    MUST_STOP = "must_stop"
    """Gone (released, replaced, evicted or stopped): stop and clean up."""


DEFAULT_PATIENCE = {
    ContentType.NONMIXABLE: timedelta(0),
    ContentType.MIXABLE: timedelta(minutes=5),
}

FocusObserver = Callable[[FocusState, MixingBehavior], Awaitable[None] | None]


def _ignore_focus(_state: FocusState, _behavior: MixingBehavior) -> None:
    return None


@dataclass(frozen=True, slots=True, eq=False)
class Activity:
    """Something that wants the speaker. Compared by identity, not by value."""

    name: str
    channel: Channel
    on_focus_changed: FocusObserver = _ignore_focus
    content_type: ContentType = ContentType.NONMIXABLE
    patience: timedelta | None = None
    """How long it may wait in the background; None: :data:`DEFAULT_PATIENCE`."""
    on_patience_expired: Callable[[], Awaitable[None]] | None = None

    @property
    def effective_patience(self) -> timedelta:
        return self.patience if self.patience is not None else DEFAULT_PATIENCE[self.content_type]


@dataclass(frozen=True, slots=True)
class FocusEntry:
    """One row of :meth:`FocusManager.snapshot`."""

    channel: Channel
    name: str
    state: FocusState
    behavior: MixingBehavior
    content_type: ContentType


@dataclass(slots=True, eq=False)
class _Record:
    activity: Activity
    state: FocusState = FocusState.NONE
    behavior: MixingBehavior = MixingBehavior.MUST_STOP
    patience_token: int = 0
    """Bumped whenever a patience timer starts or stops, so a stale expiry is ignored."""
    patience_task: asyncio.Task[None] | None = None


@dataclass(frozen=True, slots=True)
class _Acquire:
    activity: Activity


@dataclass(frozen=True, slots=True)
class _Release:
    activity: Activity


@dataclass(frozen=True, slots=True)
class _StopAll:
    pass


@dataclass(frozen=True, slots=True)
class _Drain:
    pass


@dataclass(frozen=True, slots=True)
class _Expire:
    activity: Activity
    token: int


_Op = _Acquire | _Release | _StopAll | _Drain | _Expire


@dataclass(slots=True)
class _Request:
    op: _Op
    done: asyncio.Future[Any] | None = field(default=None)


class FocusManager:
    """The focus actor. Create, :meth:`start` on the loop, :meth:`close` at exit."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep) -> None:
        self._sleep = sleep
        self._channels: dict[Channel, _Record] = {}
        self._queue: asyncio.Queue[_Request] = asyncio.Queue()
        self._actor: asyncio.Task[None] | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------

    def start(self) -> None:
        """Start the actor task on the running loop. Idempotent."""
        if self._closed:
            raise RuntimeError("focus manager is closed")
        if self._actor is None:
            self._actor = asyncio.get_running_loop().create_task(self._run(), name="focus")

    async def close(self) -> None:
        """Stop the actor and patience timers; pending requests fail. No notifications:
        call :meth:`stop_all` first if the activities must hear MUST_STOP."""
        self._closed = True
        for record in self._channels.values():
            self._stop_patience(record)
        if self._actor is not None:
            self._actor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._actor
        while not self._queue.empty():
            request = self._queue.get_nowait()
            if request.done is not None and not request.done.done():
                request.done.set_exception(RuntimeError("focus manager closed"))

    async def __aenter__(self) -> FocusManager:
        self.start()
        return self

    async def __aexit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- requests (any task) ---------------------------------------------

    async def acquire(self, activity: Activity) -> FocusState:
        """Put ``activity`` on its channel (replacing whatever was there).

        Returns its state once processed: FOREGROUND, BACKGROUND, or NONE
        when it landed in the background with zero patience and was evicted.
        """
        state: FocusState = await self._submit(_Acquire(activity))
        return state

    async def release(self, activity: Activity) -> bool:
        """Remove ``activity`` (told NONE/MUST_STOP). False if it was not there."""
        released: bool = await self._submit(_Release(activity))
        return released

    async def stop_all(self) -> None:
        """Remove every activity, each told NONE/MUST_STOP (foreground first)."""
        await self._submit(_StopAll())

    async def drain(self) -> None:
        """Return once every request queued before this one has been processed."""
        await self._submit(_Drain())

    # -- reads (any task on the loop) ------------------------------------

    def snapshot(self) -> tuple[FocusEntry, ...]:
        """The activities by channel priority, with their current state."""
        return tuple(
            FocusEntry(
                channel=channel,
                name=record.activity.name,
                state=record.state,
                behavior=record.behavior,
                content_type=record.activity.content_type,
            )
            for channel, record in sorted(self._channels.items())
        )

    def foreground(self) -> Activity | None:
        """The FOREGROUND activity, if any."""
        if not self._channels:
            return None
        return self._channels[min(self._channels)].activity

    def state_of(self, activity: Activity) -> FocusState:
        record = self._channels.get(activity.channel)
        if record is None or record.activity is not activity:
            return FocusState.NONE
        return record.state

    # -- the actor -------------------------------------------------------

    async def _submit(self, op: _Op) -> Any:
        if self._closed:
            raise RuntimeError("focus manager is closed")
        if self._actor is None:
            raise RuntimeError("focus manager not started: call start() on the loop first")
        if asyncio.current_task() is self._actor:
            raise RuntimeError(
                "a focus callback awaited a focus request; it would wait on itself "
                "(start a task instead)"
            )
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Request(op, done))
        return await done

    async def _run(self) -> None:
        while True:
            request = await self._queue.get()
            try:
                result = await self._handle(request.op)
            except Exception as exc:  # a bug here must not kill the actor
                log.exception("focus_request_failed", op=type(request.op).__name__)
                if request.done is not None and not request.done.done():
                    request.done.set_exception(exc)
                continue
            if request.done is not None and not request.done.done():
                request.done.set_result(result)

    async def _handle(self, op: _Op) -> Any:
        if isinstance(op, _Acquire):
            return await self._do_acquire(op.activity)
        if isinstance(op, _Release):
            return await self._do_release(op.activity)
        if isinstance(op, _StopAll):
            removed = [self._channels.pop(ch) for ch in sorted(self._channels)]
            await self._transition(removed)
            return None
        if isinstance(op, _Expire):
            await self._do_expire(op.activity, op.token)
            return None
        return None  # _Drain: reaching it is the answer

    async def _do_acquire(self, activity: Activity) -> FocusState:
        current = self._channels.get(activity.channel)
        if current is not None and current.activity is activity:
            return current.state
        removed: list[_Record] = []
        if current is not None:
            log.info(
                "focus_replaced",
                channel=activity.channel.name,
                old=current.activity.name,
                new=activity.name,
            )
            removed.append(current)
        self._channels[activity.channel] = _Record(activity)
        await self._transition(removed)
        return self.state_of(activity)

    async def _do_release(self, activity: Activity) -> bool:
        record = self._channels.get(activity.channel)
        if record is None or record.activity is not activity:
            return False
        del self._channels[activity.channel]
        await self._transition([record])
        return True

    async def _transition(self, removed: list[_Record]) -> None:
        """Recompute every state, then notify: removed, backgrounded, foregrounded."""
        changed: list[_Record] = []
        winner = min(self._channels) if self._channels else None
        for channel, record in sorted(self._channels.items()):
            if channel == winner:
                new = (FocusState.FOREGROUND, MixingBehavior.PRIMARY)
            elif record.activity.content_type is ContentType.MIXABLE:
                new = (FocusState.BACKGROUND, MixingBehavior.MAY_DUCK)
            else:
                new = (FocusState.BACKGROUND, MixingBehavior.MUST_PAUSE)
            if (record.state, record.behavior) != new:
                record.state, record.behavior = new
                changed.append(record)
        for record in removed:
            self._stop_patience(record)
            record.state, record.behavior = FocusState.NONE, MixingBehavior.MUST_STOP
        for record in changed:
            if record.state is FocusState.BACKGROUND:
                self._start_patience(record)
            else:
                self._stop_patience(record)
        losers = [r for r in changed if r.state is FocusState.BACKGROUND]
        winners = [r for r in changed if r.state is FocusState.FOREGROUND]
        for record in [*removed, *losers, *winners]:
            await self._notify(record)
        for record in losers:
            if record.activity.effective_patience <= timedelta(0):
                await self._do_expire(record.activity, record.patience_token)

    def _start_patience(self, record: _Record) -> None:
        self._stop_patience(record)
        seconds = record.activity.effective_patience.total_seconds()
        if seconds <= 0:
            return  # evicted inline by _transition
        record.patience_task = asyncio.get_running_loop().create_task(
            self._patience_timer(record.activity, record.patience_token, seconds),
            name=f"focus-patience-{record.activity.name}",
        )

    def _stop_patience(self, record: _Record) -> None:
        record.patience_token += 1
        if record.patience_task is not None:
            record.patience_task.cancel()
            record.patience_task = None

    async def _patience_timer(self, activity: Activity, token: int, seconds: float) -> None:
        await self._sleep(seconds)
        self._queue.put_nowait(_Request(_Expire(activity, token)))

    async def _do_expire(self, activity: Activity, token: int) -> None:
        record = self._channels.get(activity.channel)
        if (
            record is None
            or record.activity is not activity
            or record.patience_token != token
            or record.state is not FocusState.BACKGROUND
        ):
            return  # foreground again, replaced or released since the timer started
        log.info(
            "focus_patience_expired",
            activity=activity.name,
            channel=activity.channel.name,
            patience_s=activity.effective_patience.total_seconds(),
        )
        if activity.on_patience_expired is not None:
            try:
                await activity.on_patience_expired()
            except Exception:
                log.exception("focus_patience_callback_failed", activity=activity.name)
        if self._channels.get(activity.channel) is record:
            del self._channels[activity.channel]
            await self._transition([record])

    async def _notify(self, record: _Record) -> None:
        activity = record.activity
        log.info(
            "focus_changed",
            activity=activity.name,
            channel=activity.channel.name,
            state=record.state.value,
            behavior=record.behavior.value,
        )
        try:
            result = activity.on_focus_changed(record.state, record.behavior)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("focus_observer_failed", activity=activity.name)
