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

One channel holds at most one :class:`FocusClaimant`. The activity on the
highest-priority occupied channel is FOREGROUND with PRIMARY mixing; every
other one is BACKGROUND with MAY_DUCK (``ContentType.MIXABLE``: keep playing,
quieter) or MUST_PAUSE (``NONMIXABLE``: stop advancing, resume at the same
sample when foreground again). An activity told NONE/MUST_STOP is gone: stop
it and forget it.

Patience: while an activity is BACKGROUND its patience runs (its own
``patience``, else 0 for NONMIXABLE and 5 minutes for MIXABLE). Foreground
again before it runs out: nothing happens. Run out: ``on_patience_expired``
is awaited, then (if it is still in the background) the activity is told
NONE/MUST_STOP and removed.

Every request is a plain call on the loop (:meth:`FocusManager.acquire`,
:meth:`~FocusManager.release`, :meth:`~FocusManager.stop_all`): the new
states are computed and applied before it returns, so the mixer hears of a
change in the same loop callback as the button press that caused it. An
activity that names its mixer ``source`` is ducked, paused, unducked or
resumed by the focus manager itself (:func:`apply_mixing`), one call from
the decision to the source. Observers are called next, losers first (NONE,
then BACKGROUND), the new foreground last. A request made from inside an
observer runs right after the current transition, so transitions never
interleave.

Only what waits is a task: a patience timer, and an ``on_patience_expired``
callback (the skill's code; the eviction follows it, and :meth:`drain`
waits for the ones in flight). Patience 0 without a callback evicts inside
the same request, so ``acquire`` returns with the preempted activity gone.

How the coordinator uses it::

    focus = FocusManager()          # sleep= injectable for tests
    focus.start()                   # on the loop; or ``async with focus:``
    radio = FocusClaimant("radio", Channel.CONTENT, content_type=ContentType.MIXABLE,
                     source=content, on_focus_changed=cb)
    focus.acquire(radio)            # a stream starts
    focus.acquire(listening)        # PTT pressed: the radio is ducked when this returns
    focus.release(listening)        # the turn is over: unducked
    ...
    focus.stop_all(); await focus.close()   # shutdown

``on_focus_changed(state, behavior)`` is called synchronously and must not
block; MUST_STOP means stop the media task. A callback that raises is
logged and the transition stands.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType
from typing import Protocol

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

FocusObserver = Callable[[FocusState, MixingBehavior], None]


def _ignore_focus(_state: FocusState, _behavior: MixingBehavior) -> None:
    return None


class MixedSource(Protocol):
    """The mixer controls of one playback source (the audio layer's source port)."""

    def duck(self) -> None: ...

    def unduck(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


def apply_mixing(source: MixedSource, old: MixingBehavior, new: MixingBehavior) -> None:
    """Move ``source`` from ``old`` to ``new``: undo what ``old`` did, then do ``new``.

    PRIMARY and MUST_STOP leave the source at full gain and running."""
    if old is new:
        return
    if old is MixingBehavior.MAY_DUCK:
        source.unduck()
    elif old is MixingBehavior.MUST_PAUSE:
        source.resume()
    if new is MixingBehavior.MAY_DUCK:
        source.duck()
    elif new is MixingBehavior.MUST_PAUSE:
        source.pause()


@dataclass(frozen=True, slots=True, eq=False)
class FocusClaimant:
    """Something that wants the speaker. Compared by identity, not by value."""

    name: str
    channel: Channel
    on_focus_changed: FocusObserver = _ignore_focus
    content_type: ContentType = ContentType.NONMIXABLE
    patience: timedelta | None = None
    """How long it may wait in the background; None: :data:`DEFAULT_PATIENCE`."""
    on_patience_expired: Callable[[], Awaitable[None]] | None = None
    source: MixedSource | None = None
    """The mixer source it plays on, if any: ducked/paused by the focus manager."""

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
    activity: FocusClaimant
    state: FocusState = FocusState.NONE
    behavior: MixingBehavior = MixingBehavior.MUST_STOP
    patience_token: int = 0
    """Bumped whenever a patience timer starts or stops, so a stale expiry is ignored."""
    patience_task: asyncio.Task[None] | None = None


@dataclass(frozen=True, slots=True)
class _Acquire:
    activity: FocusClaimant


@dataclass(frozen=True, slots=True)
class _Release:
    activity: FocusClaimant


@dataclass(frozen=True, slots=True)
class _StopAll:
    pass


@dataclass(frozen=True, slots=True)
class _Expire:
    activity: FocusClaimant
    token: int


_Op = _Acquire | _Release | _StopAll | _Expire


class FocusManager:
    """The focus state. Create, :meth:`start` on the loop, :meth:`close` at exit."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep) -> None:
        self._sleep = sleep
        self._channels: dict[Channel, _Record] = {}
        self._ops: deque[_Op] = deque()
        """Requests made while a transition runs (from an observer): run right after it."""
        self._running = False
        self._expiring: set[asyncio.Task[None]] = set()
        """``on_patience_expired`` callbacks in flight (never cancelled: the skill's code)."""
        self._started = False
        self._closed = False

    # -- lifecycle -------------------------------------------------------

    def start(self) -> None:
        """Accept requests from now on. Idempotent."""
        if self._closed:
            raise RuntimeError("focus manager is closed")
        self._started = True

    async def close(self) -> None:
        """Stop the patience timers and wait for callbacks in flight. No notifications:
        call :meth:`stop_all` first if the activities must hear MUST_STOP."""
        self._closed = True
        for record in self._channels.values():
            self._stop_patience(record)
        await self.drain()

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

    # -- requests (on the loop) ------------------------------------------

    def acquire(self, activity: FocusClaimant) -> FocusState:
        """Put ``activity`` on its channel (replacing whatever was there).

        Returns its state: FOREGROUND, BACKGROUND, or NONE when it landed in
        the background with zero patience (and no callback to await) and was
        evicted. From inside an observer the request runs after the current
        transition, and the state returned is the one before it.
        """
        self._submit(_Acquire(activity))
        return self.state_of(activity)

    def release(self, activity: FocusClaimant) -> bool:
        """Remove ``activity`` (told NONE/MUST_STOP). False if it was not there."""
        present = self.state_of(activity) is not FocusState.NONE
        self._submit(_Release(activity))
        return present

    def stop_all(self) -> None:
        """Remove every activity, each told NONE/MUST_STOP (foreground first)."""
        self._submit(_StopAll())

    async def drain(self) -> None:
        """Return once the ``on_patience_expired`` callbacks in flight, and the
        evictions that follow them, are done."""
        await asyncio.sleep(0)  # a timer that just fired starts its callback
        # Only the unfinished ones: a finished task leaves the set by a done
        # callback that runs on a later loop pass, and from Python 3.12 on
        # gather() of finished tasks returns without yielding to the loop, so
        # waiting "while the set is not empty" would spin forever.
        while pending := [task for task in self._expiring if not task.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    # -- reads (on the loop) ---------------------------------------------

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

    def foreground(self) -> FocusClaimant | None:
        """The FOREGROUND activity, if any."""
        if not self._channels:
            return None
        return self._channels[min(self._channels)].activity

    def state_of(self, activity: FocusClaimant) -> FocusState:
        record = self._channels.get(activity.channel)
        if record is None or record.activity is not activity:
            return FocusState.NONE
        return record.state

    # -- transitions -----------------------------------------------------

    def _submit(self, op: _Op) -> None:
        if self._closed:
            raise RuntimeError("focus manager is closed")
        if not self._started:
            raise RuntimeError("focus manager not started: call start() on the loop first")
        self._ops.append(op)
        if self._running:
            return  # an observer asked: runs after the current transition
        self._running = True
        try:
            while self._ops:
                op = self._ops.popleft()
                try:
                    self._handle(op)
                except Exception:  # a bug here must not wedge the next request
                    log.exception("focus_request_failed", op=type(op).__name__)
        finally:
            self._running = False

    def _handle(self, op: _Op) -> None:
        if isinstance(op, _Acquire):
            self._do_acquire(op.activity)
        elif isinstance(op, _Release):
            record = self._channels.get(op.activity.channel)
            if record is not None and record.activity is op.activity:
                del self._channels[op.activity.channel]
                self._transition([record])
        elif isinstance(op, _StopAll):
            self._transition([self._channels.pop(ch) for ch in sorted(self._channels)])
        else:
            self._evict(op.activity, op.token)

    def _do_acquire(self, activity: FocusClaimant) -> None:
        current = self._channels.get(activity.channel)
        if current is not None and current.activity is activity:
            return
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
        self._transition(removed)

    def _transition(self, removed: list[_Record]) -> None:
        """Recompute every state, mix, then notify: removed, backgrounded, foregrounded."""
        changed = self._recompute()
        gone = [(record, record.behavior) for record in removed]
        for record in removed:
            self._stop_patience(record)
            record.state, record.behavior = FocusState.NONE, MixingBehavior.MUST_STOP
        for record, _ in changed:
            if record.state is FocusState.BACKGROUND:
                self._start_patience(record)
            else:
                self._stop_patience(record)
        _mix(changed)  # before anyone hears of it: the press ducks at once
        losers = [r for r, _ in changed if r.state is FocusState.BACKGROUND]
        winners = [r for r, _ in changed if r.state is FocusState.FOREGROUND]
        for record in [*removed, *losers, *winners]:
            self._notify(record)
        # A removed source goes back to full gain only after its owner heard
        # MUST_STOP (and flushed it): resuming first would play a paused
        # stream's next samples for a period.
        _mix(gone)
        for record in losers:
            if record.activity.effective_patience <= timedelta(0):
                self._expire(record.activity, record.patience_token)

    def _recompute(self) -> list[tuple[_Record, MixingBehavior]]:
        """Give every channel its state (the lowest channel wins the foreground);
        return the records whose state changed, each with its old behaviour."""
        changed: list[tuple[_Record, MixingBehavior]] = []
        winner = min(self._channels) if self._channels else None
        for channel, record in sorted(self._channels.items()):
            new = _state_for(record, foreground=channel == winner)
            if (record.state, record.behavior) != new:
                changed.append((record, record.behavior))
                record.state, record.behavior = new
        return changed

    def _start_patience(self, record: _Record) -> None:
        self._stop_patience(record)
        seconds = record.activity.effective_patience.total_seconds()
        if seconds <= 0:
            return  # expired by _transition itself
        record.patience_task = asyncio.get_running_loop().create_task(
            self._patience_timer(record.activity, record.patience_token, seconds),
            name=f"focus-patience-{record.activity.name}",
        )

    def _stop_patience(self, record: _Record) -> None:
        record.patience_token += 1
        if record.patience_task is not None:
            record.patience_task.cancel()
            record.patience_task = None

    async def _patience_timer(self, activity: FocusClaimant, token: int, seconds: float) -> None:
        await self._sleep(seconds)
        if not self._closed:
            self._expire(activity, token)

    def _waiting(self, activity: FocusClaimant, token: int) -> _Record | None:
        """The record of ``activity`` if its patience ``token`` still runs in the background."""
        record = self._channels.get(activity.channel)
        if (
            record is None
            or record.activity is not activity
            or record.patience_token != token
            or record.state is not FocusState.BACKGROUND
        ):
            return None  # foreground again, replaced or released since the timer started
        return record

    def _expire(self, activity: FocusClaimant, token: int) -> None:
        """Patience ran out: the callback (a task: it is the skill's), then the eviction."""
        if self._waiting(activity, token) is None:
            return
        log.info(
            "focus_patience_expired",
            activity=activity.name,
            channel=activity.channel.name,
            patience_s=activity.effective_patience.total_seconds(),
        )
        if activity.on_patience_expired is None:
            self._submit(_Expire(activity, token))
            return
        task = asyncio.get_running_loop().create_task(
            self._call_back_then_evict(activity, token), name=f"focus-expired-{activity.name}"
        )
        self._expiring.add(task)
        task.add_done_callback(self._expiring.discard)

    async def _call_back_then_evict(self, activity: FocusClaimant, token: int) -> None:
        assert activity.on_patience_expired is not None
        try:
            await activity.on_patience_expired()
        except Exception:
            log.exception("focus_patience_callback_failed", activity=activity.name)
        if not self._closed:
            self._submit(_Expire(activity, token))

    def _evict(self, activity: FocusClaimant, token: int) -> None:
        record = self._waiting(activity, token)
        if record is not None:
            del self._channels[activity.channel]
            self._transition([record])

    def _notify(self, record: _Record) -> None:
        activity = record.activity
        log.info(
            "focus_changed",
            activity=activity.name,
            channel=activity.channel.name,
            state=record.state.value,
            behavior=record.behavior.value,
        )
        try:
            activity.on_focus_changed(record.state, record.behavior)
        except Exception:
            log.exception("focus_observer_failed", activity=activity.name)


def _state_for(record: _Record, *, foreground: bool) -> tuple[FocusState, MixingBehavior]:
    if foreground:
        return FocusState.FOREGROUND, MixingBehavior.PRIMARY
    if record.activity.content_type is ContentType.MIXABLE:
        return FocusState.BACKGROUND, MixingBehavior.MAY_DUCK
    return FocusState.BACKGROUND, MixingBehavior.MUST_PAUSE


def _mix(records: list[tuple[_Record, MixingBehavior]]) -> None:
    """Move each record's source from its old behaviour to its current one."""
    for record, old in records:
        if record.activity.source is not None:
            apply_mixing(record.activity.source, old, record.behavior)
