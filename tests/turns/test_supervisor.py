"""Supervised background tasks: restart on crash, the hourly budget, permanent failure."""

from __future__ import annotations

import asyncio
import logging

import pytest

from huxley_sdk.context import BackgroundTaskHandle
from huxley_sdk.types import PermanentFailure, StopRetrying
from huxleyd.turns.supervisor import Supervisor, TaskState
from tests.fakes.cancel_as_error import CancelAsError
from tests.fakes.clock import FakeSleeper, settle


class Flaky:
    """A task body that crashes on the runs listed in ``crash_on`` (1-based)."""

    def __init__(self, crash_on: set[int] | None = None, *, forever: bool = True) -> None:
        self.crash_on = crash_on
        self.forever = forever
        self.runs = 0
        self.gate = asyncio.Event()

    async def __call__(self) -> None:
        self.runs += 1
        if self.crash_on is None or self.runs in self.crash_on:
            raise RuntimeError(f"boom on run {self.runs}")
        if self.forever:
            await asyncio.Event().wait()
        await self.gate.wait()


class Failures:
    def __init__(self) -> None:
        self.seen: list[PermanentFailure] = []

    async def async_cb(self, failure: PermanentFailure) -> None:
        await asyncio.sleep(0)
        self.seen.append(failure)

    def sync_cb(self, failure: PermanentFailure) -> None:
        self.seen.append(failure)


async def test_crash_is_logged_and_restarted_after_a_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sleeper = FakeSleeper()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    body = Flaky(crash_on={1, 2})
    with caplog.at_level(logging.INFO, logger="huxleyd.turns"):
        handle = sup.background_task("poller", body, owner="timers")
        await settle()
        assert (body.runs, handle.state) == (1, TaskState.BACKOFF)
        await sleeper.advance(0.99)
        assert body.runs == 1  # still backing off
        await sleeper.advance(0.01)
        assert body.runs == 2
        await sleeper.advance(2.0)  # second restart waits longer
        assert (body.runs, handle.state, handle.restarts) == (3, TaskState.RUNNING, 2)
        assert str(handle.last_error) == "boom on run 2"  # what status shows
    assert sleeper.requested_s == [1.0, 2.0]
    crash = next(r for r in caplog.records if "background_task_crashed" in r.getMessage())
    assert crash.exc_info is not None and "boom on run 1" in str(crash.exc_info[1])
    assert "skill=timers" in crash.getMessage() and "task=poller" in crash.getMessage()
    await sup.close()


async def test_budget_spent_calls_on_permanent_failure_once_and_stays_down() -> None:
    sleeper = FakeSleeper()
    failures = Failures()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    body = Flaky()  # crashes every run
    handle = sup.background_task(
        "always-broken", body, max_restarts_per_hour=3, on_permanent_failure=failures.async_cb
    )
    await sleeper.advance(600.0)
    assert body.runs == 4  # the first run + 3 restarts
    assert handle.state is TaskState.FAILED and handle.done()
    assert len(failures.seen) == 1 and "boom on run 4" in failures.seen[0].last_exception_message
    await sleeper.advance(7200.0)
    assert body.runs == 4 and len(failures.seen) == 1
    assert sup.tasks() == ()


async def test_crashes_spread_over_hours_never_spend_the_budget() -> None:
    sleeper = FakeSleeper()
    failures = Failures()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    crashes = 0

    async def crash_every_40_minutes() -> None:
        nonlocal crashes
        await sleeper.sleep(2400.0)
        crashes += 1
        raise OSError("network went away")

    handle = sup.background_task(
        "feed",
        crash_every_40_minutes,
        max_restarts_per_hour=2,
        on_permanent_failure=failures.sync_cb,
    )
    for _ in range(8):
        await sleeper.advance(2400.0 + 8.0)
    assert crashes >= 7 and failures.seen == []
    assert not handle.done()
    await sup.close()
    assert handle.state is TaskState.CANCELLED


async def test_permanent_failure_stops_without_restart() -> None:
    sleeper = FakeSleeper()
    failures = Failures()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    runs = 0

    async def give_up() -> None:
        nonlocal runs
        runs += 1
        raise StopRetrying("account closed")

    handle = sup.background_task("x", give_up, on_permanent_failure=failures.sync_cb)
    await sleeper.advance(3600.0)
    assert runs == 1 and handle.state is TaskState.FAILED
    assert [(f.name, f.last_exception_class, f.last_exception_message) for f in failures.seen] == [
        ("x", "StopRetrying", "account closed")
    ]
    assert sleeper.requested_s == []


async def test_restart_on_crash_false_goes_straight_to_failure() -> None:
    sleeper = FakeSleeper()
    failures = Failures()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    body = Flaky()
    handle = sup.background_task(
        "once", body, restart_on_crash=False, on_permanent_failure=failures.async_cb
    )
    await sleeper.advance(10.0)
    assert body.runs == 1 and handle.state is TaskState.FAILED and len(failures.seen) == 1


async def test_a_raising_failure_callback_is_contained() -> None:
    sleeper = FakeSleeper()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)

    def bad_callback(failure: PermanentFailure) -> None:
        raise ValueError("callback bug")

    handle = sup.background_task(
        "x", Flaky(), max_restarts_per_hour=0, on_permanent_failure=bad_callback
    )
    await settle()
    assert handle.done() and handle.state is TaskState.FAILED


async def test_normal_return_is_done_without_restart() -> None:
    sleeper = FakeSleeper()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    body = Flaky(crash_on=set(), forever=False)
    handle = sup.background_task("finite", body)
    await settle()
    assert not handle.done()
    body.gate.set()
    await handle.wait()
    assert (handle.state, body.runs) == (TaskState.DONE, 1)


async def test_cancel_is_idempotent_and_stops_restarts() -> None:
    sleeper = FakeSleeper()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    body = Flaky(crash_on={1})
    handle: BackgroundTaskHandle = sup.background_task("x", body).handle
    assert isinstance(handle, BackgroundTaskHandle) and handle.name == "x"
    await settle()  # crashed, backing off
    handle.cancel()
    handle.cancel()
    await settle()
    assert handle.done()
    await sleeper.advance(100.0)
    assert body.runs == 1


async def test_a_cancel_the_body_turns_into_an_error_still_ends_the_task() -> None:
    """A skill's task on anyio or a client library can turn the cancel into its own
    error (a task group's children's errors, a failed disconnect): that is the
    cancel, not a crash to restart, or ``close()`` at the daemon's stop waits for
    ever."""
    sleeper = FakeSleeper()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    body = CancelAsError()
    handle = sup.background_task("link", body)
    try:
        await settle()
        handle.cancel()
        await settle()
        await sleeper.advance(100.0)
        assert (handle.done(), handle.state, body.runs) == (True, TaskState.CANCELLED, 1)
    finally:
        body.as_error = False
        await sup.close()


async def test_close_cancels_and_awaits_everything() -> None:
    sleeper = FakeSleeper()
    sup = Supervisor(clock=sleeper.clock, sleep=sleeper.sleep)
    cleaned: list[str] = []

    def body(name: str) -> object:
        async def run() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                await asyncio.sleep(0)  # cleanup that itself awaits
                cleaned.append(name)

        return run

    handles = [sup.background_task(n, body(n)) for n in ("a", "b", "c")]  # type: ignore[arg-type]
    await settle()
    assert [t.name for t in sup.tasks()] == ["a", "b", "c"]
    await sup.close()
    assert sorted(cleaned) == ["a", "b", "c"]
    assert all(h.done() and h.state is TaskState.CANCELLED for h in handles)
    with pytest.raises(RuntimeError, match="shut down"):
        sup.background_task("late", body("late"))  # type: ignore[arg-type]


async def test_bad_arguments_are_named() -> None:
    sup = Supervisor()

    async def body() -> None:
        return None

    with pytest.raises(TypeError, match="coro_factory must be a callable"):
        sup.background_task("x", body())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_restarts_per_hour"):
        sup.background_task("x", body, max_restarts_per_hour=-1)
    await sup.close()
