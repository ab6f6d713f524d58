"""Proactive through its port (RecordingConversation): when injects fire, when
they are heard, and claims taking the mic; the TTL timer on a fake clock."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from huxley_sdk import ClaimEndReason, InjectPriority, InputClaim
from huxleyd.turns.proactive import Proactive
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnSource
from tests.fakes.turn_ports import RecordingConversation, Spawner
from tests.turns import FakeSleeper, settle

ROOT = Path(__file__).resolve().parents[2]


class Rig:
    def __init__(self) -> None:
        self.time = FakeSleeper()
        self.conversation = RecordingConversation()
        self.spawn = Spawner()
        self.proactive = Proactive(
            self.conversation, spawn=self.spawn, clock=self.time.clock, sleep=self.time.sleep
        )
        self.mic: list[bytes] = []
        self.ends: list[ClaimEndReason] = []

    async def __aenter__(self) -> Rig:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.proactive.close()
        await self.spawn.close()

    def fired(self) -> list[object]:
        return [arg for name, arg in self.conversation.calls if name == "begin_inject"]

    def end_turn(self, outcome: TurnOutcome, *, heard: bool = False) -> None:
        """The coordinator ends the inject's turn and reconsiders."""
        flying = self.proactive.queue.in_flight
        assert flying is not None
        turn = TurnRecord(source=TurnSource.INJECT, inject_id=flying.id, outcome=outcome)
        if heard:
            turn.first_played_at = 1.0
        self.conversation.turn_active = False
        self.proactive.turn_finished(turn)
        self.proactive.consider()

    def claim(self, speaker: AsyncIterator[bytes] | None = None) -> InputClaim:
        async def on_mic_frame(pcm: bytes) -> None:
            self.mic.append(pcm)

        async def on_claim_end(reason: ClaimEndReason) -> None:
            self.ends.append(reason)

        return InputClaim(
            on_mic_frame=on_mic_frame,
            on_claim_end=on_claim_end,
            speaker_source=speaker,
            title="memo",
        )


async def test_an_inject_fires_at_once_when_nothing_else_happens() -> None:
    async with Rig() as rig:
        await rig.proactive.inject_turn("The tea is ready.")
        assert rig.fired() == ["The tea is ready."]
        assert rig.proactive.queue.in_flight is not None


@pytest.mark.parametrize(
    ("flag", "blocking"),
    [("turn_active", True), ("listening", True), ("provider_connected", False)],
)
async def test_an_inject_waits_while_the_conversation_cannot_take_it(
    flag: str, blocking: bool
) -> None:
    """A turn under way, the button held, the provider unreachable: it waits,
    and fires when the coordinator reconsiders after that changed."""
    async with Rig() as rig:
        setattr(rig.conversation, flag, blocking)
        await rig.proactive.inject_turn("Later.")
        assert rig.fired() == []
        setattr(rig.conversation, flag, not blocking)
        rig.proactive.consider()
        assert rig.fired() == ["Later."]


async def test_a_normal_inject_waits_for_content_an_important_one_does_not() -> None:
    async with Rig() as rig:
        rig.conversation.content_in_foreground = True
        await rig.proactive.inject_turn("Normal.")
        assert rig.fired() == []
        await rig.proactive.inject_turn("Now.", priority=InjectPriority.PREEMPT)
        assert rig.fired() == ["Now."]


async def test_an_inject_that_cannot_fire_expires_on_its_own_deadline() -> None:
    async with Rig() as rig:
        rig.conversation.turn_active = True
        heard = asyncio.ensure_future(rig.proactive.inject_turn_and_wait("Soon.", ttl_s=5.0))
        await settle()
        assert len(rig.proactive.queue) == 1
        await rig.time.advance(4.9)
        assert len(rig.proactive.queue) == 1
        await rig.time.advance(0.1)  # nobody calls consider: the timer does
        assert len(rig.proactive.queue) == 0
        assert heard.done() and heard.result() is False
        rig.conversation.turn_active = False
        rig.proactive.consider()
        assert rig.fired() == []


@pytest.mark.parametrize(
    ("outcome", "first_sample_played", "heard"),
    [
        (TurnOutcome.ANSWERED, True, True),
        (TurnOutcome.INTERRUPTED, True, True),  # cut off once it was playing: heard
        (TurnOutcome.INTERRUPTED, False, False),  # cut off before a sample played
        (TurnOutcome.SILENT, False, False),
    ],
)
async def test_whether_an_inject_was_heard(
    outcome: TurnOutcome, first_sample_played: bool, heard: bool
) -> None:
    async with Rig() as rig:
        waiter = asyncio.ensure_future(rig.proactive.inject_turn_and_wait("Hello."))
        await settle()
        rig.end_turn(outcome, heard=first_sample_played)
        assert await waiter is heard
        assert rig.fired() == ["Hello."]  # not tried again


async def test_an_inject_lost_with_the_connection_is_tried_again() -> None:
    async with Rig() as rig:
        await rig.proactive.inject_turn("Again.")
        rig.end_turn(TurnOutcome.FAILED)
        assert rig.fired() == ["Again.", "Again."]


async def test_a_claim_suspends_the_conversation_and_gets_the_mic() -> None:
    async with Rig() as rig:

        async def speaker() -> AsyncIterator[bytes]:
            yield b"\1\0" * 10
            await asyncio.Event().wait()  # a call: it goes on until hung up

        rig.proactive.start_claim(rig.claim(speaker()))
        assert rig.conversation.names() == ["suspend_for_claim"]
        assert await rig.proactive.mic_frame(b"\2\0") is True
        assert rig.mic == [b"\2\0"]
        await settle()
        assert rig.conversation.comms == [b"\1\0" * 10]  # its speaker on comms
        assert await rig.proactive.cancel_active_claim() is True
        await settle()
        assert rig.conversation.names() == ["suspend_for_claim", "resume_after_claim"]
        assert rig.ends == [ClaimEndReason.NATURAL]
        assert await rig.proactive.mic_frame(b"\3\0") is False


async def test_a_press_during_a_claim_is_consumed_and_hangs_up() -> None:
    async with Rig() as rig:
        assert rig.proactive.press() is False  # no claim: a normal press
        rig.proactive.start_claim(rig.claim())
        await rig.time.advance(1.0)  # past the PTT grace
        assert rig.proactive.press() is True
        await settle()
        assert "claim-ptt" in rig.spawn.names()
        assert rig.ends == [ClaimEndReason.USER_PTT]


async def test_an_inject_preempting_a_claim_ends_it_first() -> None:
    async with Rig() as rig:
        rig.proactive.start_claim(rig.claim())
        await rig.proactive.inject_turn("Alarm!", priority=InjectPriority.PREEMPT)
        await settle()
        assert rig.ends == [ClaimEndReason.PREEMPTED]
        assert rig.conversation.names()[-1] == "begin_inject"


async def test_close_ends_the_claim_and_resolves_the_waiters() -> None:
    rig = Rig()
    rig.conversation.turn_active = True
    heard = asyncio.ensure_future(rig.proactive.inject_turn_and_wait("Never."))
    rig.proactive.start_claim(rig.claim())
    await settle()
    await rig.proactive.close()
    assert rig.ends == [ClaimEndReason.PREEMPTED]
    assert await heard is False
    await rig.spawn.close()


def test_proactive_reaches_the_coordinator_only_through_its_port() -> None:
    """No import of the coordinator, not even under TYPE_CHECKING or in a function."""
    tree = ast.parse((ROOT / "huxleyd" / "turns" / "proactive.py").read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert "huxleyd.turns.coordinator" not in imported
    assert not any(m.startswith("huxleyd.turns.replies") for m in imported)
