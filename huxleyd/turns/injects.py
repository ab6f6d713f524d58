"""Proactive turns (``ctx.inject_turn``): the queue and the pure firing rule.

Layer: pure logic; no provider, no audio. The coordinator owns one
:class:`InjectQueue` for the life of the daemon (not of a connection), so
queued injects survive a provider reconnect: nothing in here refers to one.

When an inject may speak (:func:`next_to_fire`, a pure function):

==================  =========  ==========  ==================  =====================
priority            button or  content     claim live          otherwise (idle)
                    turn       playing
==================  =========  ==========  ==================  =====================
NORMAL              wait       wait        wait                FIRE
BLOCK_BEHIND_COMMS  wait       PREEMPT_    wait (for the       FIRE
                               CONTENT     claim to end)
PREEMPT             wait       PREEMPT_    END_CLAIM_THEN_     FIRE
                               CONTENT     FIRE
==================  =========  ==========  ==================  =====================

NORMAL treats playing content as busy: it speaks once the turn is over and
no stream runs ("after the current turn ends without a content stream").
Only one inject is in flight at a time. Among the ready ones: PREEMPT, then
BLOCK_BEHIND_COMMS, then NORMAL; first queued first within a priority.

Dedup by key: adding a key that is *queued* replaces it (new prompt, new
priority, new TTL, back of the line); adding a key that is *in flight* drops
the new one. Either way the callers' waiters follow the announcement that
really plays, so ``inject_turn_and_wait`` returns when that one is heard.

Time to live (beyond Huxley): every inject has ``ttl_s`` (default
:data:`DEFAULT_TTL_S`); :meth:`InjectQueue.drop_expired` drops and logs the
stale ones with their age, so a reminder never plays an hour late in silence.

How the coordinator drives it::

    receipt = queue.add(prompt, dedup_key=k, priority=p, ttl_s=ttl)   # from ctx.inject_turn
    outcome = await receipt.outcome            # inject_turn_and_wait only
    # whenever the conversation changes (turn end, button, claim, content)
    # and at queue.next_deadline():
    queue.drop_expired(clock.monotonic())
    decision = next_to_fire(queue, snapshot, clock.monotonic())
    if decision.action is not Action.WAIT:
        queue.mark_in_flight(decision.inject.id)       # then end claim / take focus, speak
        ...; queue.mark_heard(id)  # speech reached the speaker
        # or queue.mark_failed(id, "disconnected", requeue=True) to try again later
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

from huxley_sdk.types import InjectPriority
from huxleyd.logs import get_logger

log = get_logger("huxleyd.turns")

DEFAULT_TTL_S = 600.0
"""Ten minutes: later than that, a timer or reminder is news, not an announcement."""

DEFAULT_MAX_PENDING = 64
"""Bound of the queue. Full: the oldest of the lowest priority present is dropped."""

_RANK = {
    InjectPriority.PREEMPT: 0,
    InjectPriority.BLOCK_BEHIND_COMMS: 1,
    InjectPriority.NORMAL: 2,
}


class InjectOutcome(enum.Enum):
    """How a waiter's announcement ended."""

    HEARD = "heard"
    EXPIRED = "expired"
    FAILED = "failed"
    DROPPED = "dropped"
    """Pushed out of a full queue."""
    CLOSED = "closed"
    """The daemon shut down first."""


class Action(enum.Enum):
    WAIT = "wait"
    FIRE = "fire"
    """Speak now: nothing is in the way."""
    PREEMPT_CONTENT = "preempt_content"
    """Speak over the playing content (take DIALOG focus: it ducks or pauses)."""
    END_CLAIM_THEN_FIRE = "end_claim_then_fire"
    """End the live claim with PREEMPTED, then speak."""


@dataclass(frozen=True, slots=True)
class ConversationSnapshot:
    """What the coordinator knows right now; the input of :func:`next_to_fire`."""

    turn_active: bool = False
    """A user or model turn is under way (listening, thinking, speaking, tool calls)."""
    user_holding_button: bool = False
    content_playing: bool = False
    """An AudioStream is playing (or paused in the background, waiting to resume)."""
    claim_active: bool = False


@dataclass(frozen=True, slots=True)
class PendingInject:
    """One proactive turn. Times are monotonic seconds from the queue's clock."""

    id: str
    prompt: str
    dedup_key: str | None
    priority: InjectPriority
    created_at_s: float
    ttl_s: float
    seq: int
    """Arrival order, for FIFO within a priority."""

    def expires_at_s(self) -> float:
        return self.created_at_s + self.ttl_s

    def expired(self, now_s: float) -> bool:
        return now_s >= self.expires_at_s()


@dataclass(frozen=True, slots=True)
class InjectReceipt:
    """What :meth:`InjectQueue.add` hands back."""

    id: str
    """The inject that will carry this prompt's key (the in-flight one when deduped)."""
    queued: bool
    """False when dropped because the same key was already in flight."""
    outcome: asyncio.Future[InjectOutcome]
    """Resolves when that announcement is heard, expires, fails or is dropped."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    inject: PendingInject | None = None
    waiting_for: str | None = None
    """Why WAIT: nothing_queued, inject_in_flight, button_held, turn_active,
    claim_active or content_playing (for the first inject in line)."""


class InjectQueue:
    """Pending proactive turns and the one in flight. Use on the loop thread."""

    def __init__(
        self, *, default_ttl_s: float = DEFAULT_TTL_S, max_pending: int = DEFAULT_MAX_PENDING
    ) -> None:
        _check_ttl(default_ttl_s, "default_ttl_s")
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self._default_ttl_s = default_ttl_s
        self._max_pending = max_pending
        self._pending: dict[str, PendingInject] = {}
        self._in_flight: PendingInject | None = None
        self._waiters: dict[str, list[asyncio.Future[InjectOutcome]]] = {}
        self._ids = itertools.count(1)

    # -- reads ------------------------------------------------------------

    def pending(self) -> tuple[PendingInject, ...]:
        """Queued injects in firing order (priority, then arrival)."""
        return tuple(sorted(self._pending.values(), key=_order))

    @property
    def in_flight(self) -> PendingInject | None:
        return self._in_flight

    def __len__(self) -> int:
        return len(self._pending)

    def __iter__(self) -> Iterator[PendingInject]:
        return iter(self.pending())

    def next_deadline(self) -> float | None:
        """When the next queued inject expires (monotonic s), to wake up and drop it."""
        return min((p.expires_at_s() for p in self._pending.values()), default=None)

    # -- writes -----------------------------------------------------------

    def add(
        self,
        prompt: str,
        *,
        now: float,
        dedup_key: str | None = None,
        priority: InjectPriority = InjectPriority.NORMAL,
        ttl_s: float | None = None,
    ) -> InjectReceipt:
        """Queue a proactive turn (or fold it into the one carrying its key)."""
        _check_request(prompt, priority)
        ttl = self._default_ttl_s if ttl_s is None else _check_ttl(ttl_s, "ttl_s")
        waiter: asyncio.Future[InjectOutcome] = asyncio.get_running_loop().create_future()
        flying = self._in_flight
        if dedup_key is not None and flying is not None and flying.dedup_key == dedup_key:
            log.info("inject_dropped_duplicate", key=dedup_key, in_flight=flying.id)
            self._waiters[flying.id].append(waiter)
            return InjectReceipt(flying.id, queued=False, outcome=waiter)
        inherited: list[asyncio.Future[InjectOutcome]] = []
        old = self._queued_with_key(dedup_key)
        if old is not None:
            del self._pending[old.id]
            inherited = self._waiters.pop(old.id)
        seq = next(self._ids)
        inject = PendingInject(
            id=f"inject-{seq}",
            prompt=prompt,
            dedup_key=dedup_key,
            priority=priority,
            created_at_s=now,
            ttl_s=ttl,
            seq=seq,
        )
        if old is not None:
            log.info("inject_replaced", key=dedup_key, old=old.id, new=inject.id)
        if len(self._pending) >= self._max_pending:
            self._drop_for_room(now)
        self._pending[inject.id] = inject
        self._waiters[inject.id] = [*inherited, waiter]
        log.info(
            "inject_queued",
            id=inject.id,
            key=dedup_key,
            priority=priority.value,
            ttl_s=ttl,
            pending=len(self._pending),
        )
        return InjectReceipt(inject.id, queued=True, outcome=waiter)

    def wait_for(self, dedup_key: str) -> asyncio.Future[InjectOutcome] | None:
        """A waiter on the inject queued or in flight with ``dedup_key`` (it keeps
        its prompt and priority); None when there is none."""
        carrier = (
            self._in_flight
            if (self._in_flight is not None and self._in_flight.dedup_key == dedup_key)
            else self._queued_with_key(dedup_key)
        )
        if carrier is None:
            return None
        waiter: asyncio.Future[InjectOutcome] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(carrier.id, []).append(waiter)
        return waiter

    def drop_expired(self, now: float) -> list[PendingInject]:
        """Remove the queued injects whose TTL has run out; each is logged with its age."""
        stale = [p for p in self._pending.values() if p.expired(now)]
        for inject in stale:
            del self._pending[inject.id]
            log.warning(
                "inject_expired",
                id=inject.id,
                key=inject.dedup_key,
                priority=inject.priority.value,
                age_s=round(now - inject.created_at_s, 3),
                ttl_s=inject.ttl_s,
                prompt=inject.prompt[:80],
            )
            self._resolve(inject.id, InjectOutcome.EXPIRED)
        return sorted(stale, key=_order)

    def mark_in_flight(self, inject_id: str) -> PendingInject:
        """The coordinator is starting this inject's turn now."""
        if self._in_flight is not None:
            raise RuntimeError(
                f"inject {inject_id} cannot start: {self._in_flight.id} is still in flight"
            )
        inject = self._pending.pop(inject_id, None)
        if inject is None:
            raise LookupError(f"inject {inject_id} is not queued")
        self._in_flight = inject
        return inject

    def mark_heard(self, inject_id: str) -> None:
        """The announcement reached the speaker: ``inject_turn_and_wait`` returns."""
        inject = self._take_in_flight(inject_id)
        log.info("inject_heard", id=inject.id, key=inject.dedup_key)
        self._resolve(inject.id, InjectOutcome.HEARD)

    def mark_failed(self, inject_id: str, reason: str, *, requeue: bool = False) -> None:
        """The announcement did not play. ``requeue=True`` (e.g. the provider dropped)
        puts it back where it was in line, with its original age and TTL."""
        inject = self._take_in_flight(inject_id)
        log.warning(
            "inject_failed", id=inject.id, key=inject.dedup_key, reason=reason, requeued=requeue
        )
        if requeue:
            self._pending[inject.id] = inject
        else:
            self._resolve(inject.id, InjectOutcome.FAILED)

    def close(self) -> None:
        """Shutdown: every waiter resolves CLOSED; the queue is emptied."""
        for inject_id in list(self._waiters):
            self._resolve(inject_id, InjectOutcome.CLOSED)
        self._pending.clear()
        self._in_flight = None

    # -- internals ----------------------------------------------------------

    def _queued_with_key(self, key: str | None) -> PendingInject | None:
        if key is None:
            return None
        return next((p for p in self._pending.values() if p.dedup_key == key), None)

    def _take_in_flight(self, inject_id: str) -> PendingInject:
        inject = self._in_flight
        if inject is None or inject.id != inject_id:
            current = inject.id if inject is not None else None
            raise LookupError(f"inject {inject_id} is not in flight (in flight: {current})")
        self._in_flight = None
        return inject

    def _drop_for_room(self, now: float) -> None:
        victim = max(self._pending.values(), key=lambda p: (_RANK[p.priority], -p.seq))
        del self._pending[victim.id]
        log.warning(
            "inject_dropped",
            reason="queue_full",
            id=victim.id,
            key=victim.dedup_key,
            age_s=round(now - victim.created_at_s, 3),
        )
        self._resolve(victim.id, InjectOutcome.DROPPED)

    def _resolve(self, inject_id: str, outcome: InjectOutcome) -> None:
        for waiter in self._waiters.pop(inject_id, []):
            if not waiter.done():
                waiter.set_result(outcome)


def next_to_fire(queue: InjectQueue, conversation: ConversationSnapshot, now: float) -> Decision:
    """What to do about the queued injects now. Pure: reads, never changes, the queue.

    Expired injects are skipped (they wait for :meth:`InjectQueue.drop_expired`).
    """
    if queue.in_flight is not None:
        return Decision(Action.WAIT, waiting_for="inject_in_flight")
    live = [p for p in queue.pending() if not p.expired(now)]
    if not live:
        return Decision(Action.WAIT, waiting_for="nothing_queued")
    first_block: str | None = None
    for inject in live:  # already in firing order
        action, blocked_by = _readiness(inject.priority, conversation)
        if action is not Action.WAIT:
            return Decision(action, inject)
        first_block = first_block or blocked_by
    return Decision(Action.WAIT, waiting_for=first_block)


def _readiness(priority: InjectPriority, c: ConversationSnapshot) -> tuple[Action, str | None]:
    if c.user_holding_button:
        return Action.WAIT, "button_held"
    if c.turn_active:
        return Action.WAIT, "turn_active"
    if priority is InjectPriority.NORMAL:
        if c.claim_active:
            return Action.WAIT, "claim_active"
        if c.content_playing:
            return Action.WAIT, "content_playing"
        return Action.FIRE, None
    if c.claim_active:
        if priority is InjectPriority.PREEMPT:
            return Action.END_CLAIM_THEN_FIRE, None
        return Action.WAIT, "claim_active"
    if c.content_playing:
        return Action.PREEMPT_CONTENT, None
    return Action.FIRE, None


def _order(inject: PendingInject) -> tuple[int, int]:
    return (_RANK[inject.priority], inject.seq)


def _check_request(prompt: object, priority: object) -> None:
    """What a skill's ``inject_turn`` must pass, refused with a clear error."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"inject_turn: prompt must be a non-empty string, got {prompt!r}")
    if not isinstance(priority, InjectPriority):
        raise TypeError(f"inject_turn: priority must be an InjectPriority, got {priority!r}")


def _check_ttl(ttl_s: float, name: str) -> float:
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float):
        raise TypeError(f"inject {name} must be a number of seconds, got {ttl_s!r}")
    if not math.isfinite(ttl_s) or ttl_s <= 0:
        raise ValueError(f"inject {name} must be a positive number of seconds, got {ttl_s!r}")
    return float(ttl_s)
