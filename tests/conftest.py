"""Shared test plumbing.

``async def`` tests run on a fresh event loop each (no pytest-asyncio: the
hook below is all we need). Fakes live in ``tests/fakes``.

Real-time tests account for how they were judged (``realtime`` fixture, see
``tests/fakes/realtime.py``): the session prints the counts and fails when too
many skipped for load.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any

import pytest

from tests.fakes.extensions import inspect_extensions, problems
from tests.fakes.realtime import LEDGER_KEY, Ledger, RealTime


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(_within(pyfuncitem.obj(**kwargs), TEST_TIMEOUT_S))
    return True


TEST_TIMEOUT_S = 60.0


def _awaiting(coro: Any) -> str:
    """Where a suspended coroutine waits, outermost first (follows ``cr_await``:
    ``Task.get_stack`` gives only the outermost frame)."""
    where = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            file = frame.f_code.co_filename.rsplit("/", 1)[-1]
            where.append(f"{frame.f_code.co_name} ({file}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " > ".join(where)


async def _within(coro: Any, timeout_s: float) -> None:
    """Run the test for at most ``timeout_s``; past it, fail with where every
    task was waiting (taken before anything is cancelled: a hang is named)."""
    test = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait({test}, timeout=timeout_s)
    if test in done:
        test.result()
        return
    stacks = []
    for task in asyncio.all_tasks():
        if task is asyncio.current_task():
            continue
        stacks.append(f"{task.get_name()}: {_awaiting(task.get_coro()) or '(not started)'}")
    test.cancel()
    await asyncio.wait({test}, timeout=5.0)  # a test that will not end is left behind
    raise TimeoutError(
        f"the test ran past {timeout_s:g} s; its tasks were waiting at:\n  " + "\n  ".join(stacks)
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[LEDGER_KEY] = Ledger()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test C that is not the tree's (tests/fakes/extensions.py says why)."""
    require = os.environ.get("HUXLEYD_REQUIRE_EXTENSIONS") == "1"
    found = problems(inspect_extensions(), require=require)
    if found:
        pytest.exit("the C extensions are not the tree's:\n  " + "\n  ".join(found), returncode=4)


@pytest.fixture
def realtime(request: pytest.FixtureRequest) -> RealTime:
    return RealTime(request.config.stash[LEDGER_KEY], request.node.nodeid)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    ledger = config.stash.get(LEDGER_KEY, None)
    if ledger is None or not (ledger.first or ledger.retried or ledger.skipped):
        return
    terminalreporter.write_line(ledger.summary())
    why = ledger.verdict()
    if why:
        terminalreporter.write_line(f"FAILED: {why}", red=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    ledger = session.config.stash.get(LEDGER_KEY, None)
    if ledger is not None and ledger.verdict() and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
