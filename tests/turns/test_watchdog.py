"""SilenceWatchdog: one deadline that moves, on an injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any

from huxleyd.turns.watchdog import SilenceWatchdog
from tests.turns import FakeSleeper, settle


def watchdog(timeout_s: float = 6.0) -> tuple[SilenceWatchdog, FakeSleeper, list[str]]:
    sleeper = FakeSleeper()
    return SilenceWatchdog(timeout_s, clock=sleeper.clock, sleep=sleeper.sleep), sleeper, []


def armed(dog: SilenceWatchdog) -> bool:
    """Read fresh (mypy keeps an earlier assert's narrowing of the property)."""
    return dog.armed


async def test_it_fires_once_timeout_s_after_the_arm_and_not_before() -> None:
    dog, time, fired = watchdog(6.0)
    dog.arm(lambda: fired.append("silent"))
    assert armed(dog) and dog.deadline == 6.0
    await time.advance(5.9)
    assert fired == []
    await time.advance(0.1)
    assert fired == ["silent"]
    assert not armed(dog)
    await time.advance(60.0)
    assert fired == ["silent"]  # once
    await dog.close()


async def test_arming_again_moves_the_deadline() -> None:
    dog, time, fired = watchdog(6.0)
    dog.arm(lambda: fired.append("silent"))
    for _ in range(5):  # a chunk every 4 s: never 6 s of quiet
        await time.advance(4.0)
        dog.arm(lambda: fired.append("stale"))
    assert fired == []
    assert dog.deadline == 26.0
    await time.advance(5.9)
    assert fired == []
    await time.advance(0.1)
    assert fired == ["stale"]  # the callback of the last arm
    await dog.close()


async def test_disarm_means_it_never_fires() -> None:
    dog, time, fired = watchdog(6.0)
    dog.arm(lambda: fired.append("silent"))
    await time.advance(3.0)
    dog.disarm()
    assert not armed(dog) and dog.deadline is None
    await time.advance(30.0)
    assert fired == []
    dog.arm(lambda: fired.append("again"))  # armed again after a disarm: a fresh deadline
    await time.advance(5.0)
    assert fired == []
    await time.advance(1.0)
    assert fired == ["again"]
    await dog.close()


async def test_arming_for_every_chunk_creates_no_task_per_arm() -> None:
    created: list[str] = []
    loop = asyncio.get_running_loop()
    default = loop.get_task_factory()

    def counting_factory(
        loop: asyncio.AbstractEventLoop,
        coro: Generator[Any, None, Any] | Coroutine[Any, Any, Any],
        **kwargs: Any,
    ) -> asyncio.Future[Any]:
        created.append(getattr(coro, "__qualname__", "?"))
        if default is not None:
            return default(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    dog, time, fired = watchdog(6.0)
    loop.set_task_factory(counting_factory)
    try:
        for _ in range(200):  # 200 audio chunks
            dog.arm(lambda: fired.append("stale"))
            await asyncio.sleep(0)
    finally:
        loop.set_task_factory(default)
    assert created == ["SilenceWatchdog._run"]  # one timer for the watchdog's life
    assert time.pending <= 1  # and it sleeps once, not once per arm
    await time.advance(6.0)
    assert fired == ["stale"]
    await dog.close()


async def test_a_handler_that_raises_does_not_stop_the_watchdog() -> None:
    dog, time, fired = watchdog(1.0)

    def broken() -> None:
        raise RuntimeError("handler bug")

    dog.arm(broken)
    await time.advance(1.0)
    dog.arm(lambda: fired.append("next"))
    await time.advance(1.0)
    assert fired == ["next"]
    await dog.close()


async def test_a_handler_may_arm_it_again() -> None:
    dog, time, fired = watchdog(2.0)

    def retry() -> None:
        fired.append("retry")
        if len(fired) < 3:
            dog.arm(retry)

    dog.arm(retry)
    await time.advance(2.0)
    await time.advance(2.0)
    await time.advance(2.0)
    await time.advance(10.0)
    assert fired == ["retry", "retry", "retry"]
    await dog.close()


async def test_close_stops_the_timer_and_is_idempotent() -> None:
    dog, time, fired = watchdog(1.0)
    dog.arm(lambda: fired.append("late"))
    await settle()
    await dog.close()
    await dog.close()
    await time.advance(5.0)
    assert fired == [] and not armed(dog)
    assert time.pending == 0
