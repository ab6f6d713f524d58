"""The inject queue and its firing rule: priorities × conversation states, dedup, TTL."""

from __future__ import annotations

import asyncio
import logging

import pytest

from huxley_sdk.types import InjectPriority
from huxleyd.turns.injects import (
    Action,
    ConversationSnapshot,
    InjectOutcome,
    InjectQueue,
    next_to_fire,
)

NORMAL = InjectPriority.NORMAL
BLOCK = InjectPriority.BLOCK_BEHIND_COMMS
PREEMPT = InjectPriority.PREEMPT

STATES = {
    "idle": ConversationSnapshot(),
    "mid_turn": ConversationSnapshot(turn_active=True),
    "content_playing": ConversationSnapshot(content_playing=True),
    "claim_active": ConversationSnapshot(claim_active=True),
    "button_held": ConversationSnapshot(user_holding_button=True),
    # combinations the daemon really meets
    "content_and_claim": ConversationSnapshot(content_playing=True, claim_active=True),
    "button_during_claim": ConversationSnapshot(claim_active=True, user_holding_button=True),
    "turn_during_content": ConversationSnapshot(turn_active=True, content_playing=True),
}

W, FIRE, OVER, END = (
    Action.WAIT,
    Action.FIRE,
    Action.PREEMPT_CONTENT,
    Action.END_CLAIM_THEN_FIRE,
)

# state -> (NORMAL, BLOCK_BEHIND_COMMS, PREEMPT)
TABLE = {
    "idle": (FIRE, FIRE, FIRE),
    "mid_turn": (W, W, W),
    "content_playing": (W, OVER, OVER),
    "claim_active": (W, W, END),
    "button_held": (W, W, W),
    "content_and_claim": (W, W, END),
    "button_during_claim": (W, W, W),
    "turn_during_content": (W, W, W),
}

CASES = [
    pytest.param(state, priority, TABLE[state][i], id=f"{state}-{priority.name}")
    for state in TABLE
    for i, priority in enumerate((NORMAL, BLOCK, PREEMPT))
]


@pytest.mark.parametrize(("state", "priority", "expected"), CASES)
async def test_each_priority_in_each_state(
    state: str, priority: InjectPriority, expected: Action
) -> None:
    queue = InjectQueue()
    receipt = queue.add("tell the user the tea is ready", now=0.0, priority=priority)
    decision = next_to_fire(queue, STATES[state], now=1.0)
    assert decision.action is expected
    if expected is W:
        assert decision.inject is None
        assert decision.waiting_for in {
            "turn_active",
            "button_held",
            "claim_active",
            "content_playing",
        }
    else:
        assert decision.inject is not None and decision.inject.id == receipt.id
    assert len(queue) == 1  # deciding never changes the queue


async def test_wait_reasons_name_what_is_in_the_way() -> None:
    queue = InjectQueue()
    assert next_to_fire(queue, STATES["idle"], 0.0).waiting_for == "nothing_queued"
    queue.add("a", now=0.0)
    assert next_to_fire(queue, STATES["button_during_claim"], 0.0).waiting_for == "button_held"
    assert next_to_fire(queue, STATES["mid_turn"], 0.0).waiting_for == "turn_active"
    assert next_to_fire(queue, STATES["content_playing"], 0.0).waiting_for == "content_playing"
    assert next_to_fire(queue, STATES["claim_active"], 0.0).waiting_for == "claim_active"


async def test_priority_first_then_fifo() -> None:
    queue = InjectQueue()
    n1 = queue.add("n1", now=0.0, priority=NORMAL)
    b1 = queue.add("b1", now=1.0, priority=BLOCK)
    n2 = queue.add("n2", now=2.0, priority=NORMAL)
    p1 = queue.add("p1", now=3.0, priority=PREEMPT)
    b2 = queue.add("b2", now=4.0, priority=BLOCK)
    fired = []
    while len(queue):
        decision = next_to_fire(queue, STATES["idle"], now=5.0)
        assert decision.inject is not None
        fired.append(decision.inject.id)
        queue.mark_in_flight(decision.inject.id)
        assert next_to_fire(queue, STATES["idle"], 5.0).waiting_for == "inject_in_flight"
        queue.mark_heard(decision.inject.id)
    assert fired == [p1.id, b1.id, b2.id, n1.id, n2.id]


async def test_a_ready_lower_priority_goes_when_a_higher_one_must_wait() -> None:
    """Content playing: NORMAL waits, BLOCK_BEHIND_COMMS behind it in time still goes."""
    queue = InjectQueue()
    queue.add("normal first", now=0.0, priority=NORMAL)
    block = queue.add("block later", now=1.0, priority=BLOCK)
    decision = next_to_fire(queue, STATES["content_playing"], now=2.0)
    assert (decision.action, decision.inject and decision.inject.id) == (OVER, block.id)


async def test_dedup_replaces_a_queued_inject_and_its_waiter_follows() -> None:
    queue = InjectQueue()
    first = queue.add("timer: 5 minutes", now=0.0, dedup_key="timer-1", priority=NORMAL)
    other = queue.add("something else", now=1.0)
    second = queue.add("timer: now!", now=2.0, dedup_key="timer-1", priority=BLOCK)
    assert second.queued and second.id != first.id
    assert [p.prompt for p in queue.pending()] == ["timer: now!", "something else"]
    assert not first.outcome.done()
    queue.mark_in_flight(second.id)
    queue.mark_heard(second.id)
    assert first.outcome.result() is InjectOutcome.HEARD  # the announcement of its key was heard
    assert second.outcome.result() is InjectOutcome.HEARD
    assert not other.outcome.done()


async def test_dedup_drops_the_new_one_while_the_same_key_is_in_flight(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = InjectQueue()
    flying = queue.add("doorbell", now=0.0, dedup_key="door")
    queue.mark_in_flight(flying.id)
    with caplog.at_level(logging.INFO, logger="huxleyd.turns"):
        dup = queue.add("doorbell again", now=1.0, dedup_key="door")
    assert (dup.queued, dup.id) == (False, flying.id)
    assert len(queue) == 0
    assert any("inject_dropped_duplicate" in r.getMessage() for r in caplog.records)
    queue.mark_heard(flying.id)
    assert dup.outcome.result() is InjectOutcome.HEARD
    # after it was heard the key is free again
    assert queue.add("doorbell, later", now=2.0, dedup_key="door").queued


async def test_injects_without_a_key_never_dedup() -> None:
    queue = InjectQueue()
    queue.add("one", now=0.0)
    queue.add("one", now=0.0)
    assert len(queue) == 2


async def test_ttl_expiry_drops_and_logs_the_age(caplog: pytest.LogCaptureFixture) -> None:
    queue = InjectQueue(default_ttl_s=600.0)
    old = queue.add("remind: 9:00 meeting", now=100.0, ttl_s=60.0)
    young = queue.add("default ttl", now=100.0)
    assert queue.next_deadline() == 160.0
    # still inside its TTL: kept; an expired one is never chosen, even before the sweep
    assert queue.drop_expired(159.9) == []
    decision = next_to_fire(queue, STATES["idle"], now=170.0)
    assert decision.inject is not None and decision.inject.id == young.id
    with caplog.at_level(logging.INFO, logger="huxleyd.turns"):
        dropped = queue.drop_expired(172.5)
    assert [p.id for p in dropped] == [old.id]
    assert old.outcome.result() is InjectOutcome.EXPIRED
    line = next(r.getMessage() for r in caplog.records if "inject_expired" in r.getMessage())
    assert "age_s=72.5" in line and "ttl_s=60.0" in line
    assert queue.next_deadline() == 700.0
    assert queue.drop_expired(700.0)[0].id == young.id
    assert queue.next_deadline() is None


async def test_failed_inject_requeued_keeps_its_place_and_age() -> None:
    """A provider reconnect mid-announcement: the inject goes back, first in line."""
    queue = InjectQueue()
    a = queue.add("a", now=0.0, ttl_s=100.0)
    b = queue.add("b", now=1.0)
    queue.mark_in_flight(a.id)
    queue.mark_failed(a.id, "provider_disconnected", requeue=True)
    assert [p.id for p in queue.pending()] == [a.id, b.id]
    assert not a.outcome.done()
    assert queue.drop_expired(100.0)[0].id == a.id  # its TTL still counts from creation
    queue.mark_in_flight(b.id)
    queue.mark_failed(b.id, "skill_error")
    assert b.outcome.result() is InjectOutcome.FAILED


async def test_waiter_returns_only_after_heard() -> None:
    queue = InjectQueue()
    receipt = queue.add("the laundry is done", now=0.0)
    waiting = asyncio.ensure_future(receipt.outcome)
    await asyncio.sleep(0)
    decision = next_to_fire(queue, STATES["idle"], 0.0)
    assert decision.inject is not None
    queue.mark_in_flight(decision.inject.id)
    await asyncio.sleep(0)
    assert not waiting.done()  # speaking is not heard yet
    queue.mark_heard(decision.inject.id)
    assert await waiting is InjectOutcome.HEARD


async def test_bound_drops_the_oldest_lowest_priority() -> None:
    queue = InjectQueue(max_pending=3)
    n_old = queue.add("n old", now=0.0, priority=NORMAL)
    queue.add("p", now=1.0, priority=PREEMPT)
    queue.add("n new", now=2.0, priority=NORMAL)
    queue.add("b", now=3.0, priority=BLOCK)
    assert [p.prompt for p in queue.pending()] == ["p", "b", "n new"]
    assert n_old.outcome.result() is InjectOutcome.DROPPED


async def test_close_resolves_every_waiter() -> None:
    queue = InjectQueue()
    a = queue.add("a", now=0.0)
    b = queue.add("b", now=0.0)
    queue.mark_in_flight(a.id)
    queue.close()
    assert a.outcome.result() is InjectOutcome.CLOSED
    assert b.outcome.result() is InjectOutcome.CLOSED
    assert queue.in_flight is None and len(queue) == 0


async def test_misuse_is_refused_with_a_clear_error() -> None:
    queue = InjectQueue()
    with pytest.raises(ValueError, match="prompt"):
        queue.add("  ", now=0.0)
    with pytest.raises(ValueError, match="ttl_s"):
        queue.add("x", now=0.0, ttl_s=0)
    with pytest.raises(TypeError, match="priority"):
        queue.add("x", now=0.0, priority="preempt")  # type: ignore[arg-type]
    a = queue.add("a", now=0.0)
    b = queue.add("b", now=0.0)
    queue.mark_in_flight(a.id)
    with pytest.raises(RuntimeError, match="still in flight"):
        queue.mark_in_flight(b.id)
    with pytest.raises(LookupError, match="not in flight"):
        queue.mark_heard(b.id)
    queue.mark_heard(a.id)
    with pytest.raises(LookupError, match="not queued"):
        queue.mark_in_flight("inject-999")
