"""The focus manager: ducking, pausing, patience, replacement, ordering under load."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest

from huxley_sdk.types import ContentType
from huxleyd.turns.focus import (
    Channel,
    FocusClaimant,
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


class RecordingSource:
    """A mixer source that records what the focus manager told it."""

    def __init__(self, journal: Journal | None = None, name: str = "source") -> None:
        self.calls: list[str] = []
        self._journal = journal
        self._name = name

    def _record(self, what: str) -> None:
        self.calls.append(what)
        if self._journal is not None:
            self._journal.events.append((self._name, what))

    def duck(self) -> None:
        self._record("duck")

    def unduck(self) -> None:
        self._record("unduck")

    def pause(self) -> None:
        self._record("pause")

    def resume(self) -> None:
        self._record("resume")


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
        source: RecordingSource | None = None,
        on_expired: bool = True,
    ) -> FocusClaimant:
        def observer(state: FocusState, behavior: MixingBehavior) -> None:
            self.events.append((name, f"{state.name}/{behavior.name}"))

        async def expired() -> None:
            await asyncio.sleep(0)
            self.events.append((name, "patience_expired"))

        return FocusClaimant(
            name,
            channel,
            on_focus_changed=observer,
            content_type=content_type,
            patience=patience,
            on_patience_expired=expired if on_expired else None,
            source=source,
        )

    def book_under(
        self, focus: FocusManager, name: str, channel: Channel, *, patience_s: float
    ) -> tuple[FocusClaimant, FocusClaimant]:
        """A patient book on CONTENT, then activity ``name`` on ``channel`` over it."""
        book = self.activity("book", Channel.CONTENT, patience=timedelta(seconds=patience_s))
        over = self.activity(name, channel)
        focus.acquire(book)
        focus.acquire(over)
        return book, over

    def take(self) -> list[tuple[str, str]]:
        out, self.events = self.events, []
        return out


async def test_dialog_over_mixable_content_ducks_then_comes_back() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        radio = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE)
        talk = journal.activity("listening", Channel.DIALOG)
        assert focus.acquire(radio) is F
        assert journal.take() == [("radio", "FOREGROUND/PRIMARY")]
        assert focus.acquire(talk) is F
        # the loser hears first, then the winner
        assert journal.take() == [
            ("radio", "BACKGROUND/MAY_DUCK"),
            ("listening", "FOREGROUND/PRIMARY"),
        ]
        assert focus.snapshot() == (
            FocusEntry(Channel.DIALOG, "listening", F, PRIMARY, ContentType.NONMIXABLE),
            FocusEntry(Channel.CONTENT, "radio", B, DUCK, ContentType.MIXABLE),
        )
        assert focus.release(talk) is True
        assert journal.take() == [("listening", "NONE/MUST_STOP"), ("radio", "FOREGROUND/PRIMARY")]
        assert focus.foreground() is radio


async def test_dialog_over_nonmixable_content_pauses_then_resumes() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        book = journal.activity("book", Channel.CONTENT, patience=timedelta(minutes=30))
        talk = journal.activity("listening", Channel.DIALOG)
        focus.acquire(book)
        focus.acquire(talk)
        focus.release(talk)
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
        book, call = journal.book_under(focus, "call", Channel.COMMS, patience_s=30)
        journal.take()
        await sleeper.advance(29.9)
        assert journal.take() == []
        assert focus.state_of(book) is B
        await sleeper.advance(0.1)
        await focus.drain()
        assert journal.take() == [("book", "patience_expired"), ("book", "NONE/MUST_STOP")]
        assert [e.name for e in focus.snapshot()] == ["call"]
        # releasing the call now brings nothing back
        focus.release(call)
        assert journal.take() == [("call", "NONE/MUST_STOP")]
        assert focus.foreground() is None


async def test_mixable_default_patience_is_five_minutes() -> None:
    sleeper = FakeSleeper()
    journal = Journal()
    async with FocusManager(sleep=sleeper.sleep) as focus:
        radio = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE)
        focus.acquire(radio)
        focus.acquire(journal.activity("call", Channel.COMMS))
        journal.take()
        await sleeper.advance(299.0)
        assert focus.state_of(radio) is B
        await sleeper.advance(1.0)
        await focus.drain()
        assert journal.take() == [("radio", "patience_expired"), ("radio", "NONE/MUST_STOP")]


async def test_nonmixable_default_patience_evicts_within_the_acquire() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        podcast = journal.activity("podcast", Channel.CONTENT, on_expired=False)
        focus.acquire(podcast)  # NONMIXABLE, patience 0, nothing to call back
        assert focus.acquire(journal.activity("alarm", Channel.ALERT)) is F
        assert journal.take() == [
            ("podcast", "FOREGROUND/PRIMARY"),
            ("podcast", "BACKGROUND/MUST_PAUSE"),
            ("alarm", "FOREGROUND/PRIMARY"),
            ("podcast", "NONE/MUST_STOP"),
        ]
        # an activity that arrives under a busier channel is evicted the same way
        assert focus.acquire(journal.activity("late", Channel.CONTENT, on_expired=False)) is N


async def test_zero_patience_awaits_the_callback_then_evicts() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        podcast = journal.activity("podcast", Channel.CONTENT)  # with on_patience_expired
        focus.acquire(podcast)
        focus.acquire(journal.activity("alarm", Channel.ALERT))
        await focus.drain()
        assert journal.take() == [
            ("podcast", "FOREGROUND/PRIMARY"),
            ("podcast", "BACKGROUND/MUST_PAUSE"),
            ("alarm", "FOREGROUND/PRIMARY"),
            ("podcast", "patience_expired"),
            ("podcast", "NONE/MUST_STOP"),
        ]
        assert focus.state_of(podcast) is N


async def test_foreground_before_patience_runs_out_cancels_the_eviction() -> None:
    sleeper = FakeSleeper()
    journal = Journal()
    async with FocusManager(sleep=sleeper.sleep) as focus:
        book, talk = journal.book_under(focus, "listening", Channel.DIALOG, patience_s=10)
        await sleeper.advance(9.0)
        focus.release(talk)
        assert sleeper.pending == 0  # the timer was cancelled, not left to misfire
        await sleeper.advance(60.0)
        await focus.drain()
        assert ("book", "patience_expired") not in journal.take()
        assert focus.state_of(book) is F
        # a second preemption starts a fresh, full patience
        focus.acquire(talk)
        await sleeper.advance(9.0)
        assert focus.state_of(book) is B
        await sleeper.advance(1.0)
        await focus.drain()
        assert focus.state_of(book) is N


async def test_an_activity_foreground_again_during_its_callback_is_not_evicted() -> None:
    """The timer fired and the skill's callback runs, but the dialog ended meanwhile."""
    sleeper = FakeSleeper()
    gate = asyncio.Event()
    called: list[str] = []

    async def slow_expired() -> None:
        called.append("expired")
        await gate.wait()

    async with FocusManager(sleep=sleeper.sleep) as focus:
        book = FocusClaimant(
            "book",
            Channel.CONTENT,
            patience=timedelta(seconds=5),
            on_patience_expired=slow_expired,
        )
        talk = FocusClaimant("listening", Channel.DIALOG)
        focus.acquire(book)
        focus.acquire(talk)
        await sleeper.advance(5.0)
        assert called == ["expired"]
        focus.release(talk)  # foreground again while the callback still runs
        gate.set()
        await focus.drain()
        assert focus.state_of(book) is F


async def test_same_channel_replaces_the_old_activity() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        first = journal.activity("book", Channel.CONTENT)
        second = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE)
        focus.acquire(first)
        focus.acquire(second)
        assert journal.take() == [
            ("book", "FOREGROUND/PRIMARY"),
            ("book", "NONE/MUST_STOP"),
            ("radio", "FOREGROUND/PRIMARY"),
        ]
        assert focus.release(first) is False  # already gone: no callback
        assert journal.take() == []
        assert focus.acquire(second) is F  # again: a no-op
        assert journal.take() == []


async def test_stop_all_stops_everyone_and_patience_is_not_called() -> None:
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        focus.acquire(journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE))
        focus.acquire(journal.activity("listening", Channel.DIALOG))
        journal.take()
        focus.stop_all()
        assert journal.take() == [("listening", "NONE/MUST_STOP"), ("radio", "NONE/MUST_STOP")]
        assert focus.snapshot() == ()


async def test_a_raising_observer_does_not_stop_the_transition() -> None:
    journal = Journal()

    def broken(state: FocusState, behavior: MixingBehavior) -> None:
        raise ValueError("observer bug")

    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        bad = FocusClaimant("bad", Channel.CONTENT, on_focus_changed=broken)
        talk = journal.activity("listening", Channel.DIALOG)
        focus.acquire(bad)
        focus.acquire(talk)
        assert journal.take() == [("listening", "FOREGROUND/PRIMARY")]


async def test_a_request_from_an_observer_runs_after_the_current_transition() -> None:
    journal = Journal()
    focus = FocusManager(sleep=FakeSleeper().sleep)
    other = journal.activity("other", Channel.ALERT)

    def reentrant(state: FocusState, behavior: MixingBehavior) -> None:
        journal.events.append(("x", f"{state.name}/{behavior.name}"))
        if state is F:
            focus.acquire(other)  # not nested inside this notification round

    async with focus:
        talk = journal.activity("listening", Channel.DIALOG)
        focus.acquire(talk)
        focus.release(talk)  # x becomes foreground: its observer asks for ALERT
        x = FocusClaimant(
            "x", Channel.CONTENT, on_focus_changed=reentrant, patience=timedelta(hours=1)
        )
        focus.acquire(talk)
        focus.acquire(x)
        journal.take()
        focus.release(talk)
        assert journal.take() == [
            ("listening", "NONE/MUST_STOP"),
            ("x", "FOREGROUND/PRIMARY"),
            ("x", "BACKGROUND/MUST_PAUSE"),
            ("other", "FOREGROUND/PRIMARY"),
        ]


async def test_requests_need_a_started_manager() -> None:
    focus = FocusManager()
    with pytest.raises(RuntimeError, match="not started"):
        focus.acquire(FocusClaimant("x", Channel.CONTENT))
    focus.start()
    await focus.close()
    with pytest.raises(RuntimeError, match="closed"):
        focus.acquire(FocusClaimant("x", Channel.CONTENT))


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
                focus.acquire(act)
            else:
                focus.release(act)
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


async def test_the_source_is_ducked_inside_the_acquire_and_unducked_inside_the_release() -> None:
    """The ducking decision: one call from the focus change to the source, no task."""
    journal = Journal()
    radio_source = RecordingSource(journal, "mixer")
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        radio = journal.activity("radio", Channel.CONTENT, ContentType.MIXABLE, source=radio_source)
        talk = journal.activity("listening", Channel.DIALOG)
        focus.acquire(radio)
        assert radio_source.calls == []
        focus.acquire(talk)  # no await: the mixer already knows
        assert radio_source.calls == ["duck"]
        focus.release(talk)
        assert radio_source.calls == ["duck", "unduck"]
        # the mixer moves before the observers hear of it
        assert journal.take()[1:3] == [("mixer", "duck"), ("radio", "BACKGROUND/MAY_DUCK")]


async def test_a_paused_source_resumes_and_a_removed_one_is_left_at_full_gain() -> None:
    book_source, radio_source = RecordingSource(), RecordingSource()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        book = FocusClaimant(
            "book", Channel.CONTENT, patience=timedelta(minutes=1), source=book_source
        )
        talk = FocusClaimant("listening", Channel.DIALOG)
        focus.acquire(book)
        focus.acquire(talk)
        focus.release(talk)
        assert book_source.calls == ["pause", "resume"]
        radio = FocusClaimant(
            "radio", Channel.CONTENT, content_type=ContentType.MIXABLE, source=radio_source
        )
        focus.acquire(radio)
        focus.acquire(talk)
        focus.release(radio)  # stopped while ducked: the next stream starts at full gain
        assert radio_source.calls == ["duck", "unduck"]


async def test_an_evicted_source_hears_must_stop_before_it_is_resumed() -> None:
    """Its owner flushes it on MUST_STOP; a resume first would play it for a period."""
    journal = Journal()
    async with FocusManager(sleep=FakeSleeper().sleep) as focus:
        podcast = journal.activity(
            "podcast", Channel.CONTENT, source=RecordingSource(journal, "mixer"), on_expired=False
        )
        focus.acquire(podcast)
        focus.acquire(journal.activity("alarm", Channel.ALERT))
        assert journal.take()[1:] == [
            ("mixer", "pause"),
            ("podcast", "BACKGROUND/MUST_PAUSE"),
            ("alarm", "FOREGROUND/PRIMARY"),
            ("podcast", "NONE/MUST_STOP"),
            ("mixer", "resume"),
        ]
