"""The watchdog pings WATCHDOG=1 only while the loop and the audio thread both progress."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from huxleyd.app.systemd import Notifier, Watchdog
from tests.fakes.notify import NotifyListener


class AudioCounter:
    """Stands in for the engine's periods-processed counter."""

    def __init__(self) -> None:
        self.periods = 0
        self.frozen = False

    def __call__(self) -> int:
        if not self.frozen:
            self.periods += 1
        return self.periods


def _watchdog(listener: NotifyListener, audio: AudioCounter, interval_s: float) -> Watchdog:
    notifier = Notifier({"NOTIFY_SOCKET": listener.env_value})
    return Watchdog(audio_progress=audio, interval_s=interval_s, notifier=notifier)


def test_from_environment() -> None:
    audio = AudioCounter()
    assert Watchdog.from_environment(audio_progress=audio, env={}) is None
    dog = Watchdog.from_environment(audio_progress=audio, env={"WATCHDOG_USEC": "20000000"})
    assert dog is not None and dog.interval_s == 10.0 and dog.heartbeat_s == 2.5


async def test_stalled_loop_stops_the_pings(notify_socket: NotifyListener) -> None:
    audio = AudioCounter()
    dog = _watchdog(notify_socket, audio, interval_s=10.0)
    dog.heartbeat_s = 0.005
    beating = asyncio.create_task(dog.heartbeat())
    await asyncio.sleep(0.02)
    assert dog.check()
    assert notify_socket.drain() == ["WATCHDOG=1"]

    # The loop stalls: a callback sleeps, and the watchdog thread checks meanwhile.
    verdicts: list[bool] = []
    checker = threading.Thread(target=lambda: verdicts.append(dog.check()))
    checker.start()
    time.sleep(0.05)  # noqa: ASYNC251 -- the stall under test: nothing else on the loop runs
    checker.join()
    assert verdicts == [False]
    assert notify_socket.drain() == []

    await asyncio.sleep(0.02)  # the loop runs again, the heartbeat moves
    assert dog.check()
    assert notify_socket.drain() == ["WATCHDOG=1"]
    beating.cancel()


async def test_frozen_audio_counter_stops_the_pings(
    notify_socket: NotifyListener, caplog: pytest.LogCaptureFixture
) -> None:
    audio = AudioCounter()
    dog = _watchdog(notify_socket, audio, interval_s=10.0)
    dog.heartbeat_s = 0.002
    beating = asyncio.create_task(dog.heartbeat())
    await asyncio.sleep(0.01)
    assert dog.check()
    audio.frozen = True
    with caplog.at_level(logging.INFO, logger="huxleyd.service"):
        for _ in range(3):
            await asyncio.sleep(0.01)
            assert not dog.check()
        audio.frozen = False
        await asyncio.sleep(0.01)
        assert dog.check()
    assert notify_socket.drain() == ["WATCHDOG=1", "WATCHDOG=1"]
    assert (dog.pings, dog.withheld) == (2, 3)
    events = [getattr(r, "huxley_event", "") for r in caplog.records]
    assert events == ["watchdog_withheld", "watchdog_resumed"]  # once per change, not per check
    assert "stalled=audio" in caplog.records[0].getMessage()
    beating.cancel()


def test_both_stalled_is_named(notify_socket: NotifyListener) -> None:
    audio = AudioCounter()
    dog = _watchdog(notify_socket, audio, interval_s=10.0)
    dog.beat()
    assert dog.check()
    audio.frozen = True
    assert not dog.check()  # no beat either
    notify_socket.drain()
    assert dog._withheld_for == "loop+audio"


async def _pings(listener: NotifyListener, count: int, safety_s: float = 30.0) -> None:
    """Wait for ``count`` pings, however slow the machine (the safety net only ends a hang)."""
    got = 0
    deadline = time.monotonic() + safety_s
    while got < count:
        assert time.monotonic() < deadline, f"{got} of {count} pings in {safety_s:g} s"
        got += len(listener.drain())
        await asyncio.sleep(0.01)


async def test_thread_pings_while_healthy_and_not_during_a_stall(
    notify_socket: NotifyListener,
) -> None:
    """End to end with the real thread. Timing only bounds counts, never speed."""
    audio = AudioCounter()
    dog = _watchdog(notify_socket, audio, interval_s=0.02)
    beating = asyncio.create_task(dog.heartbeat())
    dog.start()
    dog.start()  # idempotent
    await _pings(notify_socket, 2)
    notify_socket.drain()
    time.sleep(0.2)  # noqa: ASYNC251 -- the loop stalls for ten intervals, on purpose
    # At most the check already under way when the stall began may have pinged.
    assert len(notify_socket.drain()) <= 1
    await _pings(notify_socket, 2)  # healthy again: pings resume
    dog.stop()
    dog.stop()
    beating.cancel()
