"""A skill's background task in the host process: restarted when it crashes,
ended when it is cancelled, even when the skill's library turns the cancel
into an error of its own (anyio's task group raises its children's errors, a
client's ``__aexit__`` its failed disconnect). Taken for a crash, that cancel
would be spent on a restart, and the host's stop would wait for the task for
ever. Real frames on a real socket pair (the daemon's side reads nothing).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from huxley_sdk.contract import PermanentFailure
from huxleyd.skillhost.hostpath.huxley_skillhost import child
from huxleyd.skillhost.hostpath.huxley_skillhost.wire import Link
from tests.fakes.cancel_as_error import CancelAsError


async def _turns(n: int = 10) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


@asynccontextmanager
async def host() -> AsyncIterator[child.Host]:
    host_sock, daemon_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    _, host_writer = await asyncio.open_unix_connection(sock=host_sock)
    made = child.Host(Link(host_writer))
    try:
        yield made
    finally:
        for task in made._background:
            task.cancel()
        await asyncio.gather(*made._background, return_exceptions=True)
        host_writer.close()
        daemon_sock.close()


async def test_a_cancel_the_task_turns_into_an_error_still_ends_it() -> None:
    body = CancelAsError()
    async with host() as made:
        handle = made.background_task("link", body)
        try:
            await _turns()
            handle.cancel()
            await _turns()
            # Without the guard it is backing off (TASK_DELAYS_S[0]) to run it again.
            assert (handle.done(), body.runs) == (True, 1)
        finally:
            body.as_error = False


@pytest.fixture
def no_delays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(child, "TASK_DELAYS_S", (0.0,))


async def test_a_crash_outside_a_cancel_is_restarted_until_the_budget_then_reported(
    no_delays: None,
) -> None:
    """The cancel guard must not swallow a real crash: it is restarted, twice here,
    then reported once with the last error and the restarts (the SDK's record)."""
    runs = 0
    failures: list[PermanentFailure] = []

    async def body() -> None:
        nonlocal runs
        runs += 1
        raise RuntimeError(f"boom {runs}")

    async def report(failure: PermanentFailure) -> None:
        failures.append(failure)

    async with host() as made:
        handle = made.background_task(
            "poll", body, max_restarts_per_hour=2, on_permanent_failure=report
        )
        await _turns(30)
        assert (handle.done(), runs) == (True, 3)
    assert [
        (f.name, f.last_exception_class, f.last_exception_message, f.restart_count)
        for f in failures
    ] == [("poll", "RuntimeError", "boom 3", 2)]
    assert failures[0].elapsed_in_window_s >= 0.0


async def test_a_task_that_may_not_restart_is_reported_at_its_first_crash(no_delays: None) -> None:
    failures: list[PermanentFailure] = []

    async def body() -> None:
        raise ValueError("bad feed")

    async def report(failure: PermanentFailure) -> None:
        failures.append(failure)

    async with host() as made:
        made.background_task("feed", body, restart_on_crash=False, on_permanent_failure=report)
        await _turns(10)
    assert [(f.last_exception_class, f.restart_count) for f in failures] == [("ValueError", 0)]
