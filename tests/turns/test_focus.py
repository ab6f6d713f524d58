"""The focus manager: ducking, pausing, patience, replacement, ordering under load."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest

from huxley_sdk.types import ContentType
from huxleyd.turns.focus import (
    Activity,
    Channel,
    FocusEntry,
    FocusManager,
    FocusState,
    MixingBehavior,
)
from tests.fakes.clock import FakeSleeper

F, B, N = FocusState.FOREGROUND, FocusState.BACKGROUND, FocusState.NONE
PRIMARY, DUCK, PAUSE, STOP = (
    MixingBehavior.PRIMARY,
    MixingBehavior.MAY_DUCK,
    MixingBehavior.MUST_PAUSE,
    MixingBehavior.MUST_STOP,
)


class Journal:
    """Records every callback of every activity, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def activity(
        self,
        name: str,
        channel: Channel,
        content_type: ContentType = ContentType.NONMIXABLE,
        patience: timedelta | None = None,
        *,
        async_observer: bool = False,
    ) -> Activity:
        def sync_cb(state: FocusState, behavior: MixingBehavior) -> None:
            self.events.append((name, f"{state.name}/{behavior.name}"))

        async def async_cb(state: FocusState, behavior: MixingBehavior) -> None:
            await asyncio.sleep(0)
            self.events.append((name, f"{state.name}/{behavior.name}"))

        async def expired() -> None:
            await asyncio.sleep(0)
            self.events.append((name, "patience_expired"))

        return Activity(
            name,
            channel,
            on_focus_changed=async_cb if async_observer else sync_cb,
            content_type=content_type,
            patience=patience,
            on_patience_expired=expired,
        )

    async def book_under(
        self, focus: FocusManager, name: str, channel: Channel, *, patience_s: float
    ) -> tuple[Activity, Activity]:
        """A patient book on CONTENT, then activity ``name`` on ``channel`` over it."""
        book = self.activity("book", Channel.CONTENT, patience=timedelta(seconds=patience_s))
        over = self.activity(name, channel)
        await focus.acquire(book)
        await focus.acquire(over)
        return book, over

    def take(self) -> list[tuple[str, str]]:
        out, self.events = self.events, []
        return out


async def test_dialog_over_mixable_content_ducks_then_comes_back() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        radio = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE)
        talk = journal.activity("listening", Channel.DIALOG, async_observer=True)
        assert await focus.acquire(radio) is F
        assert journal.take() == [("radio", "FOREGROUND/PRIMARY")]
        assert await focus.acquire(talk) is F
        # the loser hears first, then the winner
        assert journal.take() == [
            ("radio", "BACKGROUND/MAY_DUCK"),
            ("listening", "FOREGROUND/PRIMARY"),
        ]
        assert focus.snapshot() == (
            FocusEntry(Channel.DIALOG, "listening", F, PRIMARY, ContentType.NONMIXABLE),
            FocusEntry(Channel.CONTENT, "radio", B, DUCK, ContentType.MIXABLE),
        )
        assert await focus.release(talk) is True
        assert journal.take() == [("listening", "NONE/MUST_STOP"), ("radio", "FOREGROUND/PRIMARY")]
        assert focus.foreground() is radio


async def test_dialog_over_nonmixable_content_pauses_then_resumes() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        book = journal.activity("book", Channel.CONTENT, patience=timedelta(minutes=30))
        talk = journal.activity("listening", Channel.DIALOG)
        await focus.acquire(book)
        await focus.acquire(talk)
        await focus.release(talk)
        assert journal.take() == [
            ("book", "FOREGROUND/PRIMARY"),
            ("book", "BACKGROUND/MUST_PAUSE"),
            ("listening", "FOREGROUND/PRIMARY"),
            ("listening", "NONE/MUST_STOP"),
            ("book", "FOREGROUND/PRIMARY"),
        ]


async def test_patience_expiry_calls_the_callback_before_eviction() -> None:
    sleeper = FakeSleeper()
    journal = Journal()
    async with FocusManager(sleep=sleeper.sleep) as focus:
        book, call = await journal.book_under(focus, "call", Channel.COMMS, patience_s=30)
        journal.take()
        await sleeper.advance(29.9)
        assert journal.take() == []
        assert focus.state_of(book) is B
        await sleeper.advance(0.1)
        await focus.drain()
        assert journal.take() == [("book", "patience_expired"), ("book", "NONE/MUST_STOP")]
        assert [e.name for e in focus.snapshot()] == ["call"]
        # releasing the call now brings nothing back
        await focus.release(call)
        assert journal.take() == [("call", "NONE/MUST_STOP")]
        assert focus.foreground() is None


async def test_mixable_default_patience_is_five_minutes() -> None:
    sleeper = FakeSleeper()
    journal = Journal()
    async with FocusManager(sleep=sleeper.sleep) as focus:
        radio = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE)
        await focus.acquire(radio)
        await focus.acquire(journal.activity("call", Channel.COMMS))
        journal.take()
        await sleeper.advance(299.0)
        assert focus.state_of(radio) is B
        await sleeper.advance(1.0)
        await focus.drain()
        assert journal.take() == [("radio", "patience_expired"), ("radio", "NONE/MUST_STOP")]


async def test_nonmixable_default_patience_evicts_within_the_acquire() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        podcast = journal.activity("podcast", Channel.CONTENT)  # NONMIXABLE, patience 0
        await focus.acquire(podcast)
        await focus.acquire(journal.activity("alarm", Channel.ALERT))
        assert journal.take() == [
            ("podcast", "FOREGROUND/PRIMARY"),
            ("podcast", "BACKGROUND/MUST_PAUSE"),
            ("alarm", "FOREGROUND/PRIMARY"),
            ("podcast", "patience_expired"),
            ("podcast", "NONE/MUST_STOP"),
        ]
        # an activity that arrives under a busier channel is evicted the same way
        assert await focus.acquire(journal.activity("late", Channel.CONTENT)) is N


async def test_foreground_before_patience_runs_out_cancels_the_eviction() -> None:
    sleeper = FakeSleeper()
    journal = Journal()
    async with FocusManager(sleep=sleeper.sleep) as focus:
        book, talk = await journal.book_under(focus, "listening", Channel.DIALOG, patience_s=10)
        await sleeper.advance(9.0)
        await focus.release(talk)
        assert sleeper.pending == 0  # the timer was cancelled, not left to misfire
        await sleeper.advance(60.0)
        await focus.drain()
        assert ("book", "patience_expired") not in journal.take()
        assert focus.state_of(book) is F
        # a second preemption starts a fresh, full patience
        await focus.acquire(talk)
        await sleeper.advance(9.0)
        assert focus.state_of(book) is B
        await sleeper.advance(1.0)
        await focus.drain()
        assert focus.state_of(book) is N


async def test_a_stale_expiry_already_queued_is_ignored() -> None:
    """The timer fires and queues its expiry, but a release queued first wins."""
    sleeper = FakeSleeper()
    journal = Journal()
    gate = asyncio.Event()

    async def slow_observer(state: FocusState, behavior: MixingBehavior) -> None:
        if state is N:
            await gate.wait()  # hold the actor while the timer fires behind it

    async with FocusManager(sleep=sleeper.sleep) as focus:
        book = journal.activity("book", Channel.CONTENT, patience=timedelta(seconds=5))
        blocker = Activity(
            "blocker", Channel.ALERT, on_focus_changed=slow_observer, patience=timedelta(hours=1)
        )
        talk = journal.activity("listening", Channel.DIALOG)
        await focus.acquire(book)
        await focus.acquire(talk)
        await focus.acquire(blocker)
        releasing = asyncio.create_task(focus.release(blocker))
        await asyncio.sleep(0)
        release_talk = asyncio.create_task(focus.release(talk))
        await asyncio.sleep(0)
        await sleeper.advance(5.0)  # expiry queued behind release(talk)
        gate.set()
        await releasing
        await release_talk
        await focus.drain()
        assert focus.state_of(book) is F
        assert ("book", "patience_expired") not in journal.take()


async def test_same_channel_replaces_the_old_activity() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        first = journal.activity("book", Channel.CONTENT)
        second = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE)
        await focus.acquire(first)
        await focus.acquire(second)
        assert journal.take() == [
            ("book", "FOREGROUND/PRIMARY"),
            ("book", "NONE/MUST_STOP"),
            ("radio", "FOREGROUND/PRIMARY"),
        ]
        assert await focus.release(first) is False  # already gone: no callback
        assert journal.take() == []
        assert await focus.acquire(second) is F  # again: a no-op
        assert journal.take() == []


async def test_stop_all_stops_everyone_and_patience_is_not_called() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        await focus.acquire(journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE))
        await focus.acquire(journal.activity("listening", Channel.DIALOG))
        journal.take()
        await focus.stop_all()
        assert journal.take() == [("listening", "NONE/MUST_STOP"), ("radio", "NONE/MUST_STOP")]
        assert focus.snapshot() == ()


async def test_a_raising_observer_does_not_stop_the_transition() -> None:
    journal = Journal()

    def broken(state: FocusState, behavior: MixingBehavior) -> None:
        raise ValueError("observer bug")

    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        bad = Activity("bad", Channel.CONTENT, on_focus_changed=broken)
        talk = journal.activity("listening", Channel.DIALOG)
        await focus.acquire(bad)
        await focus.acquire(talk)
        assert journal.take() == [("listening", "FOREGROUND/PRIMARY")]


async def test_an_observer_awaiting_a_request_is_refused_not_deadlocked() -> None:
    errors: list[BaseException] = []
    focus = FocusManager(sleep=FakeSleeper().sleep)

    async def reentrant(state: FocusState, behavior: MixingBehavior) -> None:
        try:
            await focus.acquire(Activity("other", Channel.ALERT))
        except RuntimeError as exc:
            errors.append(exc)

    async with focus:
        await focus.acquire(Activity("x", Channel.CONTENT, on_focus_changed=reentrant))
    assert len(errors) == 1 and "wait on itself" in str(errors[0])


async def test_requests_need_a_started_manager() -> None:
    focus = FocusManager()
    with pytest.raises(RuntimeError, match="not started"):
        await focus.drain()
    focus.start()
    await focus.close()
    with pytest.raises(RuntimeError, match="closed"):
        await focus.drain()


async def test_concurrent_requests_end_consistent() -> None:
    """Many tasks acquire and release at random; the books always balance."""
    rng = random.Random(5)
    journal = Journal()
    sleeper = FakeSleeper()
    acts = [
        journal.activity(
            f"{ch.name.lower()}{i}", ch, rng.choice(list(ContentType)), timedelta(hours=1)
        )
        for ch in Channel
        for i in range(3)
    ]

    async def worker(seed: int) -> None:
        r = random.Random(seed)
        for _ in range(40):
            act = r.choice(acts)
            if r.random() < 0.6:
                await focus.acquire(act)
            else:
                await focus.release(act)
            if r.random() < 0.3:
                await asyncio.sleep(0)

    async with FocusManager(sleep=sleeper.sleep) as focus:
        await asyncio.gather(*(worker(s) for s in range(12)))
        await focus.drain()
        snap = focus.snapshot()
        # at most one per channel, exactly one foreground (the top channel), the rest background
        assert len({e.channel for e in snap}) == len(snap)
        if snap:
            assert snap[0].state is F and snap[0].behavior is PRIMARY
            for entry in snap[1:]:
                assert entry.state is B
                want = DUCK if entry.content_type is ContentType.MIXABLE else PAUSE
                assert entry.behavior is want
        # each activity's last notification agrees with the snapshot
        last: dict[str, str] = {}
        for name, what in journal.events:
            last[name] = what
        present = {e.name: f"{e.state.name}/{e.behavior.name}" for e in snap}
        for name, what in last.items():
            assert what == present.get(name, "NONE/MUST_STOP"), name
        # and nobody was told FOREGROUND twice in a row without a change in between
        seen: dict[str, str] = {}
        for name, what in journal.events:
            assert seen.get(name) != what, (name, what)
            seen[name] = what
        # one live patience timer per background activity
        assert sleeper.pending == len(snap) - (1 if snap else 0)
