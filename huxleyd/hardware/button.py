"""The push-to-talk button: gpiozero's ``Button`` turned into asyncio events.

gpiozero calls ``when_pressed``/``when_released``/``when_held`` on its own
threads. The callbacks here do one thing: stamp the time and hand the event
to the loop with ``loop.call_soon_threadsafe``. On the loop,
:meth:`PushToTalkButton._deliver` drops what cannot be true (a second press
without a release, a hold after the release) and queues a
:class:`ButtonEvent`. :meth:`PushToTalkButton.pump` hands them to the
coordinator (a :class:`PressTarget`) as they come:

- ``PRESSED``: start listening (or barge in, or hang up a claim);
- ``RELEASED``: commit the turn;
- ``LONG_HOLD``: the button is still down after ``max_hold_s``; end the turn
  rather than stream forever. A ``RELEASED`` still follows when the finger lifts.

:meth:`press`/:meth:`release` let ``huxleyctl ptt`` drive the button: on mock
pins they move the pin (so the whole gpiozero path runs), on real pins they
inject the same events.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from dataclasses import dataclass
from typing import Any, Protocol

from gpiozero import Button
from gpiozero.pins.mock import MockPin

from huxleyd.clock import Clock, MonotonicClock
from huxleyd.hardware.boards import ButtonProfile
from huxleyd.hardware.pins import PinFactory
from huxleyd.logs import get_logger

log = get_logger("huxleyd.hardware")


class ButtonEventKind(enum.Enum):
    PRESSED = "pressed"
    RELEASED = "released"
    LONG_HOLD = "long_hold"


@dataclass(frozen=True, slots=True)
class ButtonEvent:
    """One button edge. ``time_s`` is the injected clock's monotonic time at the edge."""

    kind: ButtonEventKind
    time_s: float
    remote: bool = False
    """True when ``huxleyctl ptt`` injected it on real pins (on mock pins a remote
    press moves the pin, so it looks like a finger)."""


class PressTarget(Protocol):
    """Who the button's presses go to (the coordinator)."""

    def press(self) -> None: ...
    def release(self) -> None: ...


class PushToTalkButton:
    """A gpiozero ``Button`` on ``pin`` whose edges arrive as :class:`ButtonEvent`.

    Create it on the loop thread (it captures the running loop unless one is
    given). The queue holds ``queue_size`` events; when full the *oldest* is
    dropped and counted in :attr:`dropped_events`, so the newest state (is
    the button down now?) always gets through. Call :meth:`close` at exit.
    """

    def __init__(
        self,
        pin: int,
        *,
        pin_factory: PinFactory,
        pull_up: bool = True,
        bounce_s: float | None = 0.02,
        max_hold_s: float = 30.0,
        clock: Clock | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        queue_size: int = 64,
        remote_drives_pin: bool | None = None,
    ) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self._clock = clock or MonotonicClock()
        self._max_hold_s = max_hold_s
        self._queue: asyncio.Queue[ButtonEvent] = asyncio.Queue(maxsize=queue_size)
        self._pressed = False
        self._hold_reported = False
        self._press_remote = False
        self._remote_hold: asyncio.TimerHandle | None = None
        self.dropped_events = 0
        self._button: Any = Button(
            pin,
            pull_up=pull_up,
            bounce_time=bounce_s,
            # The long-hold limit is our own loop timer, not gpiozero's hold
            # thread: that thread waits out hold_time inside close(), so a
            # 30 s limit made closing a held button hang (ZombieThread).
            pin_factory=pin_factory,
        )
        _stop_hold_thread(self._button)
        # Remote presses move a mock pin (the whole gpiozero path runs) and are
        # injected as events on real pins. None = decide by the pin's type.
        is_mock_pin = isinstance(self._button.pin, MockPin)
        drive = is_mock_pin if remote_drives_pin is None else remote_drives_pin and is_mock_pin
        self._mock_pin: MockPin | None = self._button.pin if drive else None
        self._pull_up = pull_up
        self._button.when_pressed = lambda: self._from_gpio(ButtonEventKind.PRESSED)
        self._button.when_released = lambda: self._from_gpio(ButtonEventKind.RELEASED)

    @property
    def pin_name(self) -> str:
        """The pin gpiozero really holds (``GPIO17``), for ``huxleyctl doctor``."""
        return str(self._button.pin)

    @classmethod
    def from_profile(
        cls,
        profile: ButtonProfile,
        *,
        pin_factory: PinFactory,
        max_hold_s: float,
        clock: Clock | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> PushToTalkButton:
        """The button a board profile describes, with the config's hold limit."""
        return cls(
            profile.pin,
            pin_factory=pin_factory,
            pull_up=profile.pull_up,
            bounce_s=profile.bounce_s,
            max_hold_s=max_hold_s,
            clock=clock,
            loop=loop,
        )

    # -- gpiozero's threads ---------------------------------------------------

    def _from_gpio(self, kind: ButtonEventKind) -> None:
        """Runs on a gpiozero thread: stamp and hand over, nothing else."""
        event = ButtonEvent(kind, self._clock.monotonic())
        # RuntimeError: the loop is closed, we are shutting down.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._deliver, event)

    # -- the loop -------------------------------------------------------------

    def _deliver(self, event: ButtonEvent) -> None:
        """On the loop: keep the press/release/hold sequence consistent, then queue."""
        kind = event.kind
        if kind is ButtonEventKind.PRESSED:
            if self._pressed:
                return
            self._pressed, self._hold_reported = True, False
            self._press_remote = event.remote
            self._remote_hold = self._loop.call_later(self._max_hold_s, self._remote_held)
        elif kind is ButtonEventKind.RELEASED:
            if not self._pressed:
                return
            self._pressed = False
            self._cancel_remote_hold()
        else:
            if not self._pressed or self._hold_reported:
                return  # the hold timer raced the release, or fired twice
            self._hold_reported = True
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped_events += 1
            log.warning("button_event_dropped", dropped=self.dropped_events)
        self._queue.put_nowait(event)

    async def next_event(self) -> ButtonEvent:
        """Wait for the next button event."""
        return await self._queue.get()

    async def pump(self, target: PressTarget) -> None:
        """Hand every press and release to ``target`` (the coordinator), for ever.

        The one path from the button to the turn layer: the daemon runs it as
        its ``button`` task, and nothing sits between the queue and ``target``.
        A ``LONG_HOLD`` ends the turn as a release does (a hold past the limit)."""
        while True:
            event = await self.next_event()
            if event.kind is ButtonEventKind.PRESSED:
                target.press()
            else:
                target.release()

    def pending(self) -> int:
        """Events queued and not yet read."""
        return self._queue.qsize()

    @property
    def is_pressed(self) -> bool:
        """The button as the loop has seen it so far (events delivered, not yet read)."""
        return self._pressed

    # -- remote push-to-talk (huxleyctl ptt) ------------------------------------

    def press(self) -> None:
        """Press the button remotely. Thread-safe; a no-op if already pressed."""
        if self._mock_pin is not None:
            self._loop.call_soon_threadsafe(self._drive_mock, True)
        else:
            self._loop.call_soon_threadsafe(self._inject, ButtonEventKind.PRESSED)

    def release(self) -> None:
        """Release the button remotely. Thread-safe; a no-op if not pressed."""
        if self._mock_pin is not None:
            self._loop.call_soon_threadsafe(self._drive_mock, False)
        else:
            self._loop.call_soon_threadsafe(self._inject, ButtonEventKind.RELEASED)

    def _drive_mock(self, pressed: bool) -> None:
        pin = self._mock_pin
        assert pin is not None
        # With the pull-up a press pulls the pin to ground.
        if pressed == self._pull_up:
            pin.drive_low()
        else:
            pin.drive_high()

    def _inject(self, kind: ButtonEventKind) -> None:
        """Real pins: no gpiozero edge, so deliver the event ourselves."""
        self._deliver(ButtonEvent(kind, self._clock.monotonic(), remote=True))

    def _remote_held(self) -> None:
        """The hold limit passed with the button still down (any press, GPIO or remote)."""
        self._remote_hold = None
        self._deliver(
            ButtonEvent(ButtonEventKind.LONG_HOLD, self._clock.monotonic(), self._press_remote)
        )

    def _cancel_remote_hold(self) -> None:
        if self._remote_hold is not None:
            self._remote_hold.cancel()
            self._remote_hold = None

    def close(self) -> None:
        """Release the pin. Idempotent."""
        self._cancel_remote_hold()
        if not self._button.closed:
            self._button.close()


def _stop_hold_thread(button: Any) -> None:
    """End gpiozero's hold thread, which every ``Button`` starts and nothing here uses
    (the long-hold limit is the loop's timer): it polls ``Event.wait(0.1)`` for ever,
    ten wakeups a second, the idle daemon's only Python thread awake (issue 39).
    Ended, not joined: ``holding`` wakes it at once, it sees ``stopping`` and returns;
    ``close()`` joins it. A press still sets ``holding``, which nobody waits on then.
    A gpiozero without this thread (or with another shape of it) is left alone."""
    hold = getattr(button, "_hold_thread", None)
    stopping, holding = getattr(hold, "stopping", None), getattr(hold, "holding", None)
    if stopping is None or holding is None:
        return
    stopping.set()
    holding.set()
