"""Proactive turns and input claims, beside the coordinator.

``ctx.inject_turn`` queues an announcement in the :class:`InjectQueue`
(which outlives provider connections); :meth:`Proactive.consider` applies
the pure firing rule whenever the conversation changes and at the next TTL
deadline, and asks the conversation (:class:`ConversationPort`, which the
coordinator implements) to speak it. ``InputClaim`` (from a tool
at the terminal barrier, or ``ctx.start_input_claim`` at once) suspends the
provider: the reply is cancelled, the input buffer cleared, mic frames go to
the skill, its speaker source plays on ``comms``, and the button hangs up.

The coordinator calls (its inputs, :class:`~huxleyd.turns.inputs.TurnInputs`,
for the first two): :meth:`press` (True = consumed by a claim),
:meth:`mic_frame` (True = consumed), :meth:`turn_finished`,
:meth:`consider`, :meth:`start_claim`; and :meth:`close` at shutdown.
It sees the coordinator only through :class:`ConversationPort` (no import of
it: the coordinator imports this module, never the other way round).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from huxley_sdk import ClaimEndReason, ClaimHandle, InjectPriority, InputClaim
from huxleyd.clock import Clock
from huxleyd.logs import get_logger
from huxleyd.turns.claims import ActiveClaim, ClaimRegistry
from huxleyd.turns.injects import (
    Action,
    ConversationSnapshot,
    InjectOutcome,
    InjectQueue,
    next_to_fire,
)
from huxleyd.turns.ports import Spawn
from huxleyd.turns.state import TurnOutcome, TurnRecord

log = get_logger("huxleyd.turns")


class ConversationPort(Protocol):
    """The conversation, as injects and claims see it (the coordinator implements it)."""

    @property
    def provider_connected(self) -> bool:
        """A request sent now reaches the provider."""
        ...

    @property
    def turn_active(self) -> bool:
        """A turn is under way (from the press or request to its end)."""
        ...

    @property
    def listening(self) -> bool:
        """The user holds the button."""
        ...

    @property
    def content_in_foreground(self) -> bool:
        """A stream plays and nothing ducks or pauses it."""
        ...

    def begin_inject(self, inject_id: str, prompt: str) -> None:
        """Speak the announcement ``prompt`` now, as a turn."""

    def suspend_for_claim(self) -> None:
        """A claim took the mic: stop any reply, clear the input, background media."""

    def resume_after_claim(self) -> None:
        """The claim ended: the mic and the speaker go back to the conversation."""

    async def comms_write(self, pcm: bytes) -> None:
        """Play a claim's audio on the ``comms`` source."""


class Proactive:
    """Injects and claims of one conversation."""

    def __init__(
        self,
        conversation: ConversationPort,
        *,
        spawn: Spawn,
        clock: Clock,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._c = conversation
        self._spawn = spawn
        self._clock = clock
        self._sleep = sleep
        self.queue = InjectQueue()
        self.claims = ClaimRegistry(on_end=self._claim_ended)
        self._deadline_task: asyncio.Task[None] | None = None
        self._speaker_pump: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ ctx.inject_turn

    async def inject_turn(
        self,
        prompt: str,
        *,
        dedup_key: str | None = None,
        priority: InjectPriority = InjectPriority.NORMAL,
        ttl_s: float | None = None,
    ) -> None:
        self.queue.add(
            prompt, now=self._clock.monotonic(), dedup_key=dedup_key, priority=priority, ttl_s=ttl_s
        )
        self.consider()

    async def inject_turn_and_wait(
        self,
        prompt: str,
        /,
        *,
        dedup_key: str | None = None,
        ttl_s: float | None = None,
    ) -> bool:
        """True once the announcement has been heard; False if it never will be
        (expired, failed, dropped, or the daemon closed first).

        An announcement already queued or in flight under ``dedup_key`` is
        waited for as it is (its priority kept): ``inject_turn(…, priority=…)``
        then ``inject_turn_and_wait(…, dedup_key=…)`` queues with a priority
        and learns whether it was heard (the return value is a huxleyd
        extension; the SDK's signature returns nothing).
        """
        waiter = self.queue.wait_for(dedup_key) if dedup_key is not None else None
        if waiter is None:
            receipt = self.queue.add(
                prompt, now=self._clock.monotonic(), dedup_key=dedup_key, ttl_s=ttl_s
            )
            self.consider()
            waiter = receipt.outcome
        return await waiter is InjectOutcome.HEARD

    def consider(self) -> None:
        """Fire the next inject if the conversation allows it now."""
        now = self._clock.monotonic()
        self.queue.drop_expired(now)
        decision = next_to_fire(self.queue, self.snapshot(), now)
        inject = decision.inject
        # Offline, a request would be dropped and the inject lost after the
        # silent-response retries: wait; the coordinator calls us on reconnect.
        if decision.action is Action.WAIT or inject is None or not self._c.provider_connected:
            self._arm_deadline()
            return
        self.queue.mark_in_flight(inject.id)
        if decision.action is Action.END_CLAIM_THEN_FIRE:
            self._spawn(self._end_claim_then(inject.id, inject.prompt), "inject-preempt-claim")
            return
        self._c.begin_inject(inject.id, inject.prompt)

    async def _end_claim_then(self, inject_id: str, prompt: str) -> None:
        await self.claims.end(ClaimEndReason.PREEMPTED)
        self._c.begin_inject(inject_id, prompt)

    def snapshot(self) -> ConversationSnapshot:
        c = self._c
        return ConversationSnapshot(
            turn_active=c.turn_active,
            user_holding_button=c.listening,
            content_playing=c.content_in_foreground,
            claim_active=self.claims.active is not None,
        )

    def turn_finished(self, turn: TurnRecord) -> None:
        """Resolve the inject a turn spoke: heard when answered, else failed."""
        if turn.inject_id is None:
            return
        # Cut off by the user once it was playing: it was heard, not lost.
        interrupted_heard = (
            turn.outcome is TurnOutcome.INTERRUPTED and turn.first_played_at is not None
        )
        if turn.outcome is TurnOutcome.ANSWERED or interrupted_heard:
            self.queue.mark_heard(turn.inject_id)
        else:
            reason = turn.outcome.value if turn.outcome else "unknown"
            # A lost connection is worth another try; an interruption is not.
            self.queue.mark_failed(
                turn.inject_id, reason, requeue=turn.outcome is TurnOutcome.FAILED
            )

    def _arm_deadline(self) -> None:
        deadline = self.queue.next_deadline()
        if self._deadline_task is not None:
            self._deadline_task.cancel()
            self._deadline_task = None
        if deadline is None:
            return
        delay = max(0.0, deadline - self._clock.monotonic())
        self._deadline_task = asyncio.get_running_loop().create_task(
            self._wake_at(delay), name="inject-deadline"
        )

    async def _wake_at(self, delay_s: float) -> None:
        await self._sleep(delay_s)
        self._deadline_task = None
        self.consider()

    # ------------------------------------------------------------ claims

    async def start_input_claim(self, claim: InputClaim) -> ClaimHandle:
        """``ctx.start_input_claim``: take the mic now (ClaimBusyError if taken)."""
        return self.start_claim(claim).handle

    async def cancel_active_claim(self, *, reason: ClaimEndReason = ClaimEndReason.NATURAL) -> bool:
        """``ctx.cancel_active_claim``: True if a live claim is now ending."""
        return await self.claims.end(reason)

    def start_claim(self, claim: InputClaim) -> ActiveClaim:
        handle = self.claims.start(claim, now=self._clock.monotonic())
        self._c.suspend_for_claim()
        write = self._c.comms_write
        self._speaker_pump = asyncio.get_running_loop().create_task(
            handle.pump_speaker(write), name="claim-speaker"
        )
        return handle  # claim_started: logged once, by the claims registry

    async def _claim_ended(self, claim: ActiveClaim, reason: ClaimEndReason) -> None:
        self._c.resume_after_claim()
        self.consider()

    def press(self) -> bool:
        """A press while a claim is live hangs up (after the 300 ms grace). True = consumed."""
        if self.claims.active is None:
            return False
        self._spawn(self.claims.ptt_pressed(self._clock.monotonic()), "claim-ptt")
        return True

    async def mic_frame(self, pcm: bytes) -> bool:
        """Deliver a mic frame to the live claim. True = a claim took it."""
        if self.claims.active is None:
            return False
        await self.claims.deliver_mic_frame(pcm)
        return True

    async def close(self) -> None:
        if self._deadline_task is not None:
            self._deadline_task.cancel()
        if self.claims.active is not None:
            await self.claims.end(ClaimEndReason.PREEMPTED)
        if self._speaker_pump is not None:
            self._speaker_pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._speaker_pump
        self.queue.close()
