"""The composition root: build gives a complete record, close undoes it in order.

A real runtime (WAV backend, gpiozero's MockFactory, the simulator on
loopback, real SQLite); nothing is patched.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import traceback
import typing
from pathlib import Path
from typing import Any

import pytest
from gpiozero import Button
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.parts import Overrides, Parts
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config.load import load_config
from huxleyd.control.feedwriter import FeedWriter
from huxleyd.errors import StorageError
from huxleyd.providers.base import ConnectionState
from huxleyd.sim.scenario import Scenario
from huxleyd.sim.server import SimServer
from huxleyd.turns.state import TurnOutcome
from tests.e2e.harness import SPEED, call, speech, turn, until, write_config
from tests.fakes.notify import RecordingNotifier

OPTIONAL_BY_NATURE = {"simulator", "watchdog"}
"""The only fields of Parts that may be None, each documented in the record."""

CLOSE_ORDER = [
    "turns",
    "provider",
    "runtime-tasks",
    "skill-tasks",
    "skills",
    "leds",
    "button",
    "audio",
    "storage",
    "log-tap",
    "loop-watch",
]
"""Turns first (media bookmarks need storage and audio), then the session,
the tasks, the skills; then what build opened, last opened first.
docs/architecture.md prints it from here (``tests/doc_blocks.py``)."""

RUNTIME_TASKS = frozenset({"provider", "button", "leds", "clock", "watchdog-heartbeat"})
"""The runtime's own supervised tasks when systemd asked for a watchdog
(printed in docs/architecture.md, too)."""


def audio_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "huxleyd-audio" and t.is_alive()]


def overrides(pins: MockFactory, *, url: str, env: dict[str, str] | None = None) -> Overrides:
    return Overrides(
        backend=WavBackend(),
        clock=ScaledClock(SPEED, start_s=1000.0),
        pin_factory=pins,
        provider_url=url,
        notifier=RecordingNotifier(),
        env=env or {},
    )


def test_only_the_documented_fields_of_parts_are_optional() -> None:
    hints = typing.get_type_hints(Parts)
    optional = {
        name
        for name, hint in hints.items()
        if type(None) in typing.get_args(hint) or hint is Any  # Any could hide a None
    }
    assert optional - {"pin_factory"} == OPTIONAL_BY_NATURE  # gpiozero has no stubs


async def test_build_returns_every_part_and_close_runs_in_order(tmp_path: Path) -> None:
    pins = MockFactory(pin_class=MockPWMPin)
    # systemd asked for a watchdog: the record holds one, started by start()
    env = {"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid())}
    async with SimServer(Scenario(turns=()), speed=SPEED, synth="tone") as sim:
        config = load_config(write_config(tmp_path, skills=("system",)))
        runtime = Runtime(config, overrides(pins, url=sim.url, env=env))
        assert runtime.built is None
        with pytest.raises(RuntimeError, match="still starting"):
            _ = runtime.parts
        try:
            await runtime.start()
            await until(lambda: runtime.connection_state is ConnectionState.CONNECTED, "up")
            parts = runtime.parts
            for field in dataclasses.fields(Parts):
                if field.name != "simulator":  # the caller runs it (provider_url)
                    assert getattr(parts, field.name) is not None, field.name
            assert parts.simulator is None and parts.is_simulator
            assert parts.watchdog is not None
            assert set(runtime.task_health()) == RUNTIME_TASKS
            assert [s.name for s in parts.host.skills] == ["system"]
            button_pin = parts.button.pin_name
            assert audio_threads()
        finally:
            await runtime.close()
    assert runtime.stopped_steps == CLOSE_ORDER
    # and each step really happened
    assert parts.connection.status.state is ConnectionState.CLOSED
    assert not audio_threads()
    with pytest.raises(StorageError, match="closed"):
        await parts.db.skill_storage("system").get_setting("volume_level")
    Button(button_pin, pin_factory=pins).close()  # the pin was released
    pins.close()


async def test_the_session_hands_its_events_to_the_coordinator_not_through_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watch feed only follows the session's events: with its handler
    # dropping every one, the turn still runs, tool and all, because the
    # coordinator subscribes to the session itself.
    monkeypatch.setattr(FeedWriter, "on_provider_event", lambda self, event: None)
    pins = MockFactory(pin_class=MockPWMPin)
    play = Scenario(turns=(turn(call("get_volume"), speech()),))
    async with SimServer(play, speed=SPEED, synth="tone") as sim:
        config = load_config(write_config(tmp_path, skills=("system",)))
        runtime = Runtime(config, overrides(pins, url=sim.url))
        try:
            await runtime.start()
            await until(lambda: runtime.connection_state is ConnectionState.CONNECTED, "up")
            coordinator = runtime.parts.coordinator
            coordinator.say("what is the volume")
            await until(lambda: coordinator.last_turn is not None, "the turn ended")
            assert coordinator.last_turn is not None
            assert coordinator.last_turn.outcome is TurnOutcome.ANSWERED
            assert coordinator.last_turn.tools == ["get_volume"]
        finally:
            await runtime.close()
    pins.close()


class BrokenPins(MockFactory):  # type: ignore[misc]
    """A GPIO chip that fails when the button claims its pin (after audio opened)."""

    def pin(self, spec: Any, **kwargs: Any) -> Any:
        raise OSError("the GPIO chip is gone")


async def test_a_start_that_fails_half_way_closes_what_it_opened(tmp_path: Path) -> None:
    pins = BrokenPins(pin_class=MockPWMPin)
    async with SimServer(Scenario(turns=()), speed=SPEED, synth="tone") as sim:
        config = load_config(write_config(tmp_path, skills=("system",)))
        runtime = Runtime(config, overrides(pins, url=sim.url))
        try:
            with pytest.raises(OSError, match="GPIO chip is gone"):
                await runtime.start()
            assert runtime.built is None
            assert audio_threads()  # the engine was running when the button failed
        finally:
            await runtime.close()
    assert runtime.stopped_steps == [
        "runtime-tasks",
        "skill-tasks",
        "audio",
        "storage",
        "log-tap",
        "loop-watch",
    ]
    assert not audio_threads()


async def test_the_simulator_the_daemon_runs_itself_is_in_the_record_and_closed(
    tmp_path: Path,
) -> None:
    pins = MockFactory(pin_class=MockPWMPin)
    config = load_config(write_config(tmp_path, skills=("system",), provider_kind="sim"))
    runtime = Runtime(
        config,
        Overrides(
            backend=WavBackend(),
            clock=ScaledClock(SPEED, start_s=1000.0),
            pin_factory=pins,
            notifier=RecordingNotifier(),
            env={},
        ),
    )
    try:
        await runtime.start()
        sim = runtime.parts.simulator
        assert isinstance(sim, SimServer) and runtime.parts.is_simulator
        await until(lambda: runtime.connection_state is ConnectionState.CONNECTED, "up")
        port = sim.port
    finally:
        await runtime.close()
        pins.close()
    assert runtime.stopped_steps[5:] == [
        "leds",
        "button",
        "simulator",
        "audio",
        "storage",
        "log-tap",
        "loop-watch",
    ]
    with pytest.raises(OSError):  # nobody listens there any more
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()


SUPERVISION = {"huxleyd.app.runtime:for_good", "huxleyd.app.loopwatch:send"}
"""The root's frames under every runtime task: the supervisor's restart
wrapper and the loop watch's step timer. They carry the task (a crash is
restarted, a slow step named), not the data: no event passes through them."""


def _root_frames() -> list[str]:
    """``module:function`` of each frame of the composition root on the stack
    now, but the supervision every runtime task runs under."""
    names = (
        f"{frame.f_globals.get('__name__')}:{frame.f_code.co_name}"
        for frame, _ in traceback.walk_stack(None)
    )
    return [n for n in names if n.startswith("huxleyd.app") and n not in SUPERVISION]


async def test_a_press_and_the_reply_reach_the_coordinator_with_the_root_off_the_stack(
    tmp_path: Path,
) -> None:
    # The root wires once and stays out of the flow: when the coordinator
    # gets a press or a release (from the mock pin, through gpiozero and the
    # button's queue) or a provider event (a reply), no frame of huxleyd.app
    # is below it. Each input is wrapped to record the stack as it arrives.
    pins = MockFactory(pin_class=MockPWMPin)
    play = Scenario(turns=(turn(speech()), turn(speech())))  # the press may commit, or not
    async with SimServer(play, speed=SPEED, synth="tone") as sim:
        config = load_config(write_config(tmp_path, skills=("system",)))
        runtime = Runtime(config, overrides(pins, url=sim.url))
        try:
            await runtime.start()
            await until(lambda: runtime.connection_state is ConnectionState.CONNECTED, "up")
            coordinator = runtime.parts.coordinator
            seen: dict[str, list[str]] = {}

            def recorded(name: str, method: Any) -> Any:
                def wrapper(*args: Any) -> Any:
                    seen.setdefault(name, []).extend(_root_frames())
                    return method(*args)

                return wrapper

            # The button task and the session call these bound methods by name at
            # each event (the session through the handler build subscribed).
            coordinator.press = recorded("press", coordinator.press)  # type: ignore[method-assign]
            coordinator.release = recorded("release", coordinator.release)  # type: ignore[method-assign]
            replies = coordinator._replies
            replies.on_event = recorded("provider event", replies.on_event)  # type: ignore[method-assign]
            pin = pins.pin(runtime.parts.button.pin_name)
            pin.drive_low()
            await until(lambda: "press" in seen, "the press reached the coordinator")
            pin.drive_high()  # however long it was held: only where it arrives matters
            await until(lambda: "release" in seen, "the release reached the coordinator")
            coordinator.say("tell me a story")  # a reply: the session's events arrive
            await until(lambda: "provider event" in seen, "the reply reached the coordinator")
            await until(lambda: coordinator.turn is None, "the reply was heard")
            assert set(seen) == {"press", "release", "provider event"}
            assert seen == {"press": [], "release": [], "provider event": []}
        finally:
            await runtime.close()
    pins.close()
