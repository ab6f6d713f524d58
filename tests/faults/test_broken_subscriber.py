"""A subscriber of the typed events raises: the turn, and the other subscribers, go on.

The watch feed's writer, the LEDs and systemd's status line follow the
coordinator's events (``turns/news.py``) and the session's (``providers/
events.py``) on a :class:`~huxleyd.bus.Bus`, called one after the other on
the loop. A real daemon (WAV backend, gpiozero's MockFactory, the simulator
on loopback) whose watch writer raises on every event: the turn is still
answered, tool and all, the LEDs (subscribed after the writer) still follow,
and the journal says which handler failed on which event.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NoReturn

import pytest
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.bus import Bus
from huxleyd.config.load import load_config
from huxleyd.control.feedwriter import FeedWriter
from huxleyd.hardware.led_patterns import LedState
from huxleyd.logs import get_logger
from huxleyd.providers.base import ConnectionState
from huxleyd.sim.scenario import Scenario
from huxleyd.sim.server import SimServer
from huxleyd.turns.state import TurnOutcome
from tests.e2e.harness import SPEED, call, speech, turn, until, write_config
from tests.fakes.notify import RecordingNotifier


def _broken(self: Any, event: Any) -> NoReturn:
    raise RuntimeError(f"a watch writer bug on {type(event).__name__}")


async def test_a_raising_watch_writer_costs_the_turn_and_the_leds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(FeedWriter, "on_news", _broken)
    monkeypatch.setattr(FeedWriter, "on_provider_event", _broken)
    pins = MockFactory(pin_class=MockPWMPin)
    play = Scenario(turns=(turn(call("get_volume"), speech()),))
    async with SimServer(play, speed=SPEED, synth="tone") as sim:
        config = load_config(write_config(tmp_path, skills=("system",)))
        overrides = Overrides(
            backend=WavBackend(),
            clock=ScaledClock(SPEED, start_s=1000.0),
            pin_factory=pins,
            provider_url=sim.url,
            notifier=RecordingNotifier(),
            env={},
        )
        runtime = Runtime(config, overrides)
        try:
            await runtime.start()
            await until(lambda: runtime.connection_state is ConnectionState.CONNECTED, "up")
            coordinator, leds = runtime.parts.coordinator, runtime.parts.leds
            with caplog.at_level(logging.ERROR, logger="huxleyd"):
                coordinator.say("what is the volume")
                await until(lambda: leds.state is LedState.THINKING, "the LEDs follow")
                await until(lambda: coordinator.last_turn is not None, "the turn ended")
            assert coordinator.last_turn is not None
            assert coordinator.last_turn.outcome is TurnOutcome.ANSWERED
            assert coordinator.last_turn.tools == ["get_volume"]
            failed = {r.getMessage().split()[0] for r in caplog.records}
            assert {"turn_news_handler_failed", "provider_event_handler_failed"} <= failed
        finally:
            await runtime.close()
    pins.close()


def test_the_bus_serves_every_handler_in_order_past_one_that_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus: Bus[int] = Bus(get_logger("huxleyd.test"), failed="test_handler_failed")
    seen: list[str] = []

    def broken(event: int) -> None:
        seen.append(f"broken {event}")
        raise ValueError(event)

    bus.subscribe(lambda e: seen.append(f"first {e}"))
    bus.subscribe(broken)
    unsubscribe = bus.subscribe(lambda e: seen.append(f"last {e}"))
    with caplog.at_level(logging.ERROR, logger="huxleyd"):
        bus.publish(1)
        unsubscribe()
        unsubscribe()  # idempotent
        bus.publish(2)
    assert seen == ["first 1", "broken 1", "last 1", "first 2", "broken 2"]
    assert [r.getMessage().split()[0] for r in caplog.records] == ["test_handler_failed"] * 2
    assert bus.subscribers == 2
