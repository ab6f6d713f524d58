"""Status LEDs: a state → pattern map, drivers behind one small interface, and
a controller whose every state has an exit.

Layers, top down:

- :class:`LedController` (the loop calls :meth:`~LedController.set_state` as
  the coordinator moves, and runs :meth:`~LedController.run` as a task): maps
  states to patterns and returns transient states to IDLE when they outlive
  their limit, so a missed transition cannot leave the speaker "listening"
  all night.
- :class:`LedPattern`: what a state looks like (off, solid, blink, pulse;
  a colour and level for LEDs that can show them).
- :class:`LedDriver`: shows a pattern. gpiozero's ``LED``/``PWMLED``/``RGBLED``
  animate on their own threads (:class:`GpioLedDriver`, :class:`RgbLedDriver`);
  APA102 strips are animated by :meth:`LedDriver.tick` from the controller
  (``huxleyd.hardware.apa102``).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpiozero import LED, PWMLED, RGBLED

from huxleyd.clock import Clock
from huxleyd.hardware.boards import LedProfile
from huxleyd.hardware.pins import PinFactory
from huxleyd.hardware.settings import LedLimits
from huxleyd.logs import get_logger

log = get_logger("huxleyd.hardware")


class LedState(enum.Enum):
    """What the speaker is doing, as far as the LEDs show it."""

    BOOTING = "booting"
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    MEDIA = "media"
    OFFLINE = "offline"
    ERROR = "error"
    MUTED = "muted"


class PatternKind(enum.Enum):
    OFF = "off"
    SOLID = "solid"
    BLINK = "blink"
    PULSE = "pulse"


Rgb = tuple[float, float, float]
"""A colour, each channel 0.0-1.0."""

WHITE: Rgb = (1.0, 1.0, 1.0)
BLUE: Rgb = (0.0, 0.2, 1.0)
CYAN: Rgb = (0.0, 0.8, 1.0)
GREEN: Rgb = (0.0, 1.0, 0.2)
AMBER: Rgb = (1.0, 0.45, 0.0)
RED: Rgb = (1.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class LedPattern:
    """How a state looks.

    ``BLINK`` is ``on_s`` lit then ``off_s`` dark; ``PULSE`` fades up over
    ``fade_in_s`` and down over ``fade_out_s``. ``level`` (0-1) scales the
    colour; single-colour LEDs ignore ``color`` and plain (non-PWM) LEDs
    treat any level above zero as on and show a pulse as a blink.
    """

    kind: PatternKind
    color: Rgb = WHITE
    level: float = 1.0
    on_s: float = 0.0
    off_s: float = 0.0
    fade_in_s: float = 0.0
    fade_out_s: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.level <= 1.0 or any(not 0.0 <= c <= 1.0 for c in self.color):
            raise ValueError(f"level and colour channels must be 0-1: {self}")
        if self.kind is PatternKind.BLINK and (self.on_s <= 0 or self.off_s <= 0):
            raise ValueError(f"a blink needs on_s and off_s > 0: {self}")
        if self.kind is PatternKind.PULSE and (self.fade_in_s <= 0 or self.fade_out_s <= 0):
            raise ValueError(f"a pulse needs fade_in_s and fade_out_s > 0: {self}")

    @property
    def period_s(self) -> float:
        """One cycle of a blink or pulse (0 for steady patterns)."""
        if self.kind is PatternKind.BLINK:
            return self.on_s + self.off_s
        if self.kind is PatternKind.PULSE:
            return self.fade_in_s + self.fade_out_s
        return 0.0

    @property
    def lit_color(self) -> Rgb:
        """``color`` scaled by ``level``: what the LED shows at full brightness."""
        r, g, b = self.color
        return (r * self.level, g * self.level, b * self.level)


OFF = LedPattern(PatternKind.OFF)

DEFAULT_PATTERNS: Mapping[LedState, LedPattern] = {
    LedState.BOOTING: LedPattern(PatternKind.PULSE, WHITE, 0.6, fade_in_s=1.0, fade_out_s=1.0),
    LedState.IDLE: OFF,
    LedState.LISTENING: LedPattern(PatternKind.SOLID, BLUE),
    LedState.THINKING: LedPattern(PatternKind.BLINK, CYAN, on_s=0.15, off_s=0.15),
    LedState.SPEAKING: LedPattern(PatternKind.PULSE, GREEN, fade_in_s=0.4, fade_out_s=0.4),
    LedState.MEDIA: LedPattern(PatternKind.SOLID, GREEN, 0.2),
    LedState.OFFLINE: LedPattern(PatternKind.BLINK, AMBER, on_s=0.2, off_s=1.8),
    LedState.ERROR: LedPattern(PatternKind.BLINK, RED, on_s=0.1, off_s=0.1),
    LedState.MUTED: LedPattern(PatternKind.SOLID, RED, 0.3),
}
"""Every state has a pattern: blue = listening, cyan blink = thinking, green
pulse = speaking, dim green = media, slow amber = offline, fast red = error,
dim red = muted."""


def limits_from_settings(limits: LedLimits) -> dict[LedState, float]:
    """The watchdog limits (seconds) for the transient states, from ``[hardware.led_limits]``."""
    return {
        LedState.LISTENING: limits.listening_s,
        LedState.THINKING: limits.thinking_s,
        LedState.SPEAKING: limits.speaking_s,
        LedState.ERROR: limits.error_s,
    }


def pattern_level(pattern: LedPattern, elapsed_s: float) -> float:
    """Brightness (0-1, before ``level``) of ``pattern`` at ``elapsed_s`` into it.

    Pure, for drivers that animate themselves (APA102). A blink is lit for
    the first ``on_s`` of each period; a pulse ramps linearly up then down.
    """
    if pattern.kind is PatternKind.OFF:
        return 0.0
    if pattern.kind is PatternKind.SOLID:
        return 1.0
    phase = elapsed_s % pattern.period_s
    if pattern.kind is PatternKind.BLINK:
        return 1.0 if phase < pattern.on_s else 0.0
    if phase < pattern.fade_in_s:
        return phase / pattern.fade_in_s
    return max(0.0, 1.0 - (phase - pattern.fade_in_s) / pattern.fade_out_s)


class LedDriver(Protocol):
    """Shows patterns on some LEDs. Called from the loop thread only."""

    def show(self, pattern: LedPattern, now_s: float) -> None:
        """Start showing ``pattern`` (``now_s``: the controller's clock, for self-animated drivers)."""

    def tick(self, now_s: float) -> None:
        """Advance a self-animated pattern; a no-op for drivers that animate on their own."""

    def close(self) -> None:
        """Turn the LEDs off and release their pins. Idempotent."""


class NullLedDriver:
    """For boards without LEDs: remembers the pattern, shows nothing."""

    def __init__(self) -> None:
        self.pattern: LedPattern = OFF

    def show(self, pattern: LedPattern, now_s: float) -> None:
        self.pattern = pattern

    def tick(self, now_s: float) -> None:
        pass

    def close(self) -> None:
        pass


class GpioLedDriver:
    """One LED on one pin: gpiozero ``PWMLED`` (dims, pulses) or ``LED`` (on/off only)."""

    def __init__(
        self, pin: int, *, pin_factory: PinFactory, pwm: bool = True, active_high: bool = True
    ) -> None:
        cls = PWMLED if pwm else LED
        self._pwm = pwm
        self._led: Any = cls(pin, active_high=active_high, pin_factory=pin_factory)

    def show(self, pattern: LedPattern, now_s: float) -> None:
        led = self._led
        kind = pattern.kind
        if kind is PatternKind.OFF or (kind is PatternKind.SOLID and pattern.level == 0):
            led.off()
        elif kind is PatternKind.SOLID:
            if self._pwm:
                led.value = pattern.level
            else:
                led.on()
        elif kind is PatternKind.BLINK:
            led.blink(on_time=pattern.on_s, off_time=pattern.off_s)
        elif self._pwm:
            led.pulse(fade_in_time=pattern.fade_in_s, fade_out_time=pattern.fade_out_s)
        else:
            # A plain LED cannot fade: the nearest thing is a blink of the same rhythm.
            led.blink(on_time=pattern.fade_in_s, off_time=pattern.fade_out_s)

    def tick(self, now_s: float) -> None:
        pass  # gpiozero animates on its own thread

    def close(self) -> None:
        if not self._led.closed:
            self._led.off()  # stops a blink thread and leaves the LED dark
            self._led.close()


class RgbLedDriver:
    """An RGB LED on three pins through gpiozero ``RGBLED``."""

    def __init__(
        self,
        red_pin: int,
        green_pin: int,
        blue_pin: int,
        *,
        pin_factory: PinFactory,
        pwm: bool = True,
        active_high: bool = True,
    ) -> None:
        self._pwm = pwm
        self._led: Any = RGBLED(
            red_pin, green_pin, blue_pin, active_high=active_high, pwm=pwm, pin_factory=pin_factory
        )

    def _color(self, pattern: LedPattern) -> Rgb:
        lit = pattern.lit_color
        if self._pwm:
            return lit
        # On/off pins: a channel is on if the colour has any of it.
        r, g, b = (1.0 if c > 0 else 0.0 for c in lit)
        return (r, g, b)

    def show(self, pattern: LedPattern, now_s: float) -> None:
        led = self._led
        color = self._color(pattern)
        kind = pattern.kind
        if kind is PatternKind.OFF:
            led.off()
        elif kind is PatternKind.SOLID:
            led.color = color
        elif kind is PatternKind.BLINK:
            led.blink(on_time=pattern.on_s, off_time=pattern.off_s, on_color=color)
        elif self._pwm:
            led.pulse(
                fade_in_time=pattern.fade_in_s, fade_out_time=pattern.fade_out_s, on_color=color
            )
        else:
            led.blink(on_time=pattern.fade_in_s, off_time=pattern.fade_out_s, on_color=color)

    def tick(self, now_s: float) -> None:
        pass

    def close(self) -> None:
        if not self._led.closed:
            self._led.off()  # stops a blink thread and leaves the LED dark
            self._led.close()


def make_led_driver(
    profile: LedProfile, *, pin_factory: PinFactory, spi: Any | None = None
) -> LedDriver:
    """The driver a board's ``[leds]`` table describes.

    ``spi`` overrides the SPI interface of an ``apa102`` board (tests pass a
    recorder); otherwise hardware SPI comes from the pin factory
    (``/dev/spidev<bus>.<device>``) and bit-banged boards get two output pins.
    """
    if profile.kind == "none":
        return NullLedDriver()
    if profile.kind in ("led", "pwmled"):
        assert profile.pin is not None  # LedProfile.__post_init__ checked it
        return GpioLedDriver(
            profile.pin,
            pin_factory=pin_factory,
            pwm=profile.kind == "pwmled",
            active_high=profile.active_high,
        )
    if profile.kind == "rgbled":
        assert None not in (profile.red_pin, profile.green_pin, profile.blue_pin)
        return RgbLedDriver(
            profile.red_pin,  # type: ignore[arg-type]
            profile.green_pin,  # type: ignore[arg-type]
            profile.blue_pin,  # type: ignore[arg-type]
            pin_factory=pin_factory,
            pwm=profile.pwm,
            active_high=profile.active_high,
        )
    from huxleyd.hardware.apa102 import Apa102Driver, open_spi

    return Apa102Driver(
        spi if spi is not None else open_spi(profile, pin_factory=pin_factory),
        count=profile.count,
        brightness=profile.brightness,
        color_order=profile.color_order,
    )


@dataclass
class _Current:
    state: LedState
    since_s: float
    expired: int = field(default=0)


class LedController:
    """Follows the coordinator's state on the LEDs; every state has an exit.

    :meth:`set_state` shows the state's pattern at once (setting the same
    state again only restarts its timer: the coordinator is confirming it).
    :meth:`tick` (called by :meth:`run`, or by tests with a ManualClock)
    returns a transient state to IDLE once it has lasted longer than its
    limit and logs ``led_state_expired``; states without a limit (IDLE,
    MEDIA, OFFLINE, MUTED, BOOTING by default) last until told otherwise.
    """

    def __init__(
        self,
        driver: LedDriver,
        clock: Clock,
        *,
        patterns: Mapping[LedState, LedPattern] = DEFAULT_PATTERNS,
        limits_s: Mapping[LedState, float] | None = None,
        initial: LedState = LedState.BOOTING,
    ) -> None:
        missing = [s.name for s in LedState if s not in patterns]
        if missing:
            raise ValueError(f"no LED pattern for {', '.join(missing)}")
        self._driver = driver
        self._clock = clock
        self._patterns = dict(patterns)
        self._limits = dict(limits_from_settings(LedLimits()) if limits_s is None else limits_s)
        self._current = _Current(initial, clock.monotonic())
        self._changed: asyncio.Event | None = None
        self.expired_count = 0
        """How many times the watchdog had to step in (``huxleyctl status`` shows it)."""
        driver.show(self._patterns[initial], self._current.since_s)

    @property
    def state(self) -> LedState:
        return self._current.state

    def set_state(self, state: LedState) -> None:
        """Show ``state`` now. Call from the loop thread."""
        now = self._clock.monotonic()
        previous = self._current.state
        self._current = _Current(state, now)
        if self._changed is not None:
            self._changed.set()  # wake run(): the new pattern may move
        if state is not previous:
            if log.is_enabled_for(logging.DEBUG):
                log.debug("led_state", state=state.value, previous=previous.value)
            self._driver.show(self._patterns[state], now)

    def tick(self) -> LedState:
        """Expire an overdue transient state, advance self-animated drivers; returns the state."""
        now = self._clock.monotonic()
        current = self._current
        limit = self._limits.get(current.state)
        if limit is not None and now - current.since_s > limit:
            self.expired_count += 1
            log.warning(
                "led_state_expired",
                state=current.state.value,
                after_s=round(now - current.since_s, 3),
                limit_s=limit,
            )
            self.set_state(LedState.IDLE)
        self._driver.tick(now)
        return self._current.state

    async def run(self, *, period_s: float = 0.04) -> None:
        """Tick until cancelled: every ``period_s`` (25 Hz, smooth enough for an
        APA102 pulse) while a pattern moves; while it is static (off, solid),
        only at the next state change or when the state's time limit runs out,
        so an idle speaker does not wake the loop 25 times a second."""
        self._changed = asyncio.Event()
        while True:
            state = self.tick()
            if self._patterns[state].kind not in (PatternKind.OFF, PatternKind.SOLID):
                await asyncio.sleep(period_s)
                continue
            limit = self._limits.get(state)
            timeout = None
            if limit is not None:
                timeout = max(period_s, self._current.since_s + limit - self._clock.monotonic())
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    def close(self) -> None:
        """Turn the LEDs off and release them. Idempotent."""
        self._driver.close()
