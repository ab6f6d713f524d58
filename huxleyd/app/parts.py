"""The records of the composition root: what may be injected, what was built.

Layer: wiring (data only). :class:`Overrides` is what a test (or ``make
run``) may replace; :class:`Parts` is what :func:`~huxleyd.app.build.build`
returns, every part built and typed as such; :class:`Resources` is the list
of things opened, closed in reverse order.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from huxleyd.app.systemd import Notifier, Watchdog
from huxleyd.audio.backends.base import AudioBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.volume import PersistentVolume
from huxleyd.clock import Clock
from huxleyd.config.preflight import Preflight
from huxleyd.control.reboot import REBOOT_REQUIRED
from huxleyd.hardware.button import PushToTalkButton
from huxleyd.hardware.led_controller import LedController
from huxleyd.hardware.pins import PinFactory
from huxleyd.providers.base import Session
from huxleyd.skillhost.host import SkillHost
from huxleyd.storage.db import Database
from huxleyd.turns.coordinator import Coordinator
from huxleyd.turns.instructions import SessionInstructions


@dataclass(frozen=True, slots=True, kw_only=True)
class Overrides:
    """What tests (and ``make run``) may replace. ``None`` = build from the config."""

    backend: AudioBackend | None = None
    clock: Clock | None = None
    pin_factory: PinFactory | None = None
    key_file: Path | None = None
    """Overrides the configured key file (``huxleyd --key-file``)."""
    provider_url: str | None = None
    """Talk to this URL without a key (a simulator the caller runs)."""
    notifier: Notifier | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    led_spi: Any = None
    skill_retry_delays_s: tuple[float, ...] | None = None
    """How long a failed skill's setup waits before each retry (None: the daemon's)."""
    socket_watch_s: float | None = None
    """How often the control socket's path is looked at (None: every 5 s)."""
    reboot_flag: Path = REBOOT_REQUIRED
    """Debian's "a reboot is pending" file, which ``status`` and ``doctor`` read."""
    provider_backoff: Callable[[], Iterator[float]] | None = None
    """The waits between the provider's tries (None: the daemon's 1, 3, 10, 30, 60 s)."""
    update_state: Path = Path("/var/lib/huxleyd-update/state.json")
    """``huxleyctl update``'s record: a rolled-back release is reported degraded."""


class LocalSimulator(Protocol):
    """A simulator the daemon runs itself (:class:`~huxleyd.sim.server.SimServer`,
    :class:`~huxleyd.sim.chat.CascadeSim`); only closing it is the root's business."""

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    """Every part of a running daemon, built and wired (:func:`~huxleyd.app.build.build`).

    Nothing here is "not yet": the record exists only once all of it does.
    The two optional fields are optional by nature, not by start-up order.
    """

    checked: Preflight
    """What :func:`~huxleyd.config.preflight.preflight` found (the key file used…)."""
    db: Database
    engine: AudioEngine
    audio_description: str
    """The backend in words (``wav (mic …)``, ``callback (…)``, ``injected backend``)."""
    volume: PersistentVolume
    host: SkillHost
    connection: Session
    instructions: SessionInstructions
    """Refreshed by the coordinator before each turn; re-based on reload."""
    coordinator: Coordinator
    pin_factory: PinFactory
    """The gpiozero pin factory the button and LEDs use (doctor reports it)."""
    pins_description: str
    button: PushToTalkButton
    leds: LedController
    is_simulator: bool
    """Answers come from a simulator: the built-in one, or ``Overrides.provider_url``."""
    simulator: LocalSimulator | None
    """The simulator this daemon runs itself: None with a real provider, and
    when the caller runs one (``Overrides.provider_url``)."""
    watchdog: Watchdog | None
    """None when systemd asked for no watchdog (no ``WATCHDOG_USEC``: not under
    the unit, or ``WatchdogSec=`` unset)."""


Closer = Callable[[], Awaitable[None] | None]


class Resources:
    """What was opened, in order; closed in reverse. Filled while building, so a
    build that fails half-way still closes what it opened."""

    def __init__(self) -> None:
        self._opened: list[tuple[str, Closer]] = []

    def opened(self, name: str, close: Closer) -> None:
        """``close`` (sync or async) undoes what was just opened, named ``name``."""
        self._opened.append((name, close))

    def closing_order(self) -> list[tuple[str, Closer]]:
        """The closers, last opened first; each is handed out once."""
        steps, self._opened = self._opened[::-1], []
        return steps


async def call_closer(close: Closer) -> None:
    """Run a closer, awaiting what it returns when it is awaitable."""
    result = close()
    if result is not None:
        await result
