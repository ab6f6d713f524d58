"""The stall clock: a due reply's quiet time, counted from the request and reset by frames.

:class:`~huxleyd.providers.stall.StallClock` alone, on a manual clock; the
transport's stall tests (tests/faults/test_stalled_provider.py) drive it
through a real socket.
"""

from __future__ import annotations

import asyncio

from huxleyd.clock import ManualClock
from huxleyd.providers.stall import StallClock


def test_nothing_due_is_never_quiet() -> None:
    clock = ManualClock(10.0)
    stall = StallClock(clock)
    stall.reset(10.0)
    clock.advance(60.0)
    assert stall.quiet_for_s() is None


def test_a_retry_on_our_side_does_not_restart_the_clock_only_the_peer_does() -> None:
    clock = ManualClock(10.0)
    stall = StallClock(clock)
    stall.reset(10.0)
    stall.note(True)  # a reply was asked for
    clock.advance(3.0)
    stall.note(False)  # we gave it up (a silent retry about to ask again)
    stall.note(True)
    clock.advance(2.0)
    assert stall.quiet_for_s() == 5.0, "counted from the first request"
    stall.frame_received()  # a complete frame: quiet starts over
    clock.advance(1.5)
    assert stall.quiet_for_s() == 1.5
    stall.note(False, peer_spoke=True)  # the peer ended the reply
    assert stall.quiet_for_s() is None


async def test_stalled_returns_once_a_due_reply_went_the_timeout_without_a_frame() -> None:
    clock = ManualClock(0.0)
    stall = StallClock(clock)
    stall.reset(0.0)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    watch = asyncio.create_task(stall.stalled(8.0, sleep))
    await asyncio.sleep(0)
    assert not watch.done() and slept == [], "idle: no wake-ups"
    stall.note(True)
    clock.advance(3.0)
    assert await asyncio.wait_for(watch, 1.0) == 8.0
    assert slept == [5.0], "one sleep, to the deadline"
