"""LED drivers: show a :class:`~huxleyd.hardware.led_patterns.LedPattern` on real pins.

Layer: adapters over gpiozero. gpiozero's ``LED``/``PWMLED``/``RGBLED``
animate on their own threads (:class:`GpioLedDriver`, :class:`RgbLedDriver`);
APA102 strips are animated by :meth:`LedDriver.tick` from the controller
(:mod:`huxleyd.hardware.apa102`). :func:`make_led_driver` builds the one a
board profile describes. Tests pass gpiozero's ``MockFactory`` as the pin
factory.
"""

from __future__ import annotations

from typing import Any, Protocol

from gpiozero import LED, PWMLED, RGBLED

from huxleyd.hardware.apa102 import Apa102Driver, open_spi
from huxleyd.hardware.boards import LedProfile
from huxleyd.hardware.led_patterns import OFF, LedPattern, PatternKind, Rgb
from huxleyd.hardware.pins import PinFactory


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


class _GpiozeroDriver:
    """What the gpiozero-backed drivers share: the device animates on its own
    thread (``tick`` has nothing to do), and closing leaves it dark."""

    def __init__(self, led: Any, *, pwm: bool) -> None:
        self._led = led
        self._pwm = pwm

    def tick(self, now_s: float) -> None:
        pass  # gpiozero animates on its own thread

    def close(self) -> None:
        if not self._led.closed:
            self._led.off()  # stops a blink thread and leaves the LED dark
            self._led.close()


class GpioLedDriver(_GpiozeroDriver):
    """One LED on one pin: gpiozero ``PWMLED`` (dims, pulses) or ``LED`` (on/off only)."""

    def __init__(
        self, pin: int, *, pin_factory: PinFactory, pwm: bool = True, active_high: bool = True
    ) -> None:
        cls = PWMLED if pwm else LED
        super().__init__(cls(pin, active_high=active_high, pin_factory=pin_factory), pwm=pwm)

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


class RgbLedDriver(_GpiozeroDriver):
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
        led = RGBLED(
            red_pin, green_pin, blue_pin, active_high=active_high, pwm=pwm, pin_factory=pin_factory
        )
        super().__init__(led, pwm=pwm)

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
    return Apa102Driver(
        spi if spi is not None else open_spi(profile, pin_factory=pin_factory),
        count=profile.count,
        brightness=profile.brightness,
        color_order=profile.color_order,
    )
