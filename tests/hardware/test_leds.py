"""LEDs: the pattern map, gpiozero drivers on mock pins, and the controller's watchdog.

gpiozero animates blinks and pulses on its own thread; here that thread and the
mock pins' timestamps run on a clock the test steps (the ``gpio_time`` fixture),
so each timeline is exact and no load can stretch it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from huxleyd.clock import ManualClock
from huxleyd.hardware.led_controller import LedController
from huxleyd.hardware.led_drivers import GpioLedDriver, NullLedDriver, RgbLedDriver
from huxleyd.hardware.led_patterns import (
    DEFAULT_PATTERNS,
    OFF,
    LedPattern,
    LedState,
    PatternKind,
    limits_from_settings,
    pattern_level,
)
from huxleyd.hardware.settings import LedLimits
from tests.fakes.clock import FakeSleeper
from tests.fakes.gpio_time import SteppedTime

BLINK = LedPattern(PatternKind.BLINK, on_s=0.1, off_s=0.1)
PULSE = LedPattern(PatternKind.PULSE, fade_in_s=0.2, fade_out_s=0.2)


def test_every_state_has_a_pattern_and_the_transient_ones_a_limit() -> None:
    assert set(DEFAULT_PATTERNS) == set(LedState)
    assert DEFAULT_PATTERNS[LedState.IDLE] == OFF
    limits = limits_from_settings(LedLimits())
    assert set(limits) == {
        LedState.LISTENING,
        LedState.THINKING,
        LedState.SPEAKING,
        LedState.ERROR,
    }


def test_controller_refuses_a_map_without_every_state() -> None:
    patterns: dict[LedState, LedPattern] = {
        s: p for s, p in DEFAULT_PATTERNS.items() if s is not LedState.MUTED
    }
    with pytest.raises(ValueError, match="MUTED"):
        LedController(NullLedDriver(), ManualClock(), patterns=patterns)


def test_pattern_validation() -> None:
    with pytest.raises(ValueError):
        LedPattern(PatternKind.BLINK, on_s=0.1)
    with pytest.raises(ValueError):
        LedPattern(PatternKind.SOLID, level=1.5)


def test_pattern_level() -> None:
    assert pattern_level(OFF, 3.0) == 0.0
    assert pattern_level(LedPattern(PatternKind.SOLID), 3.0) == 1.0
    assert [pattern_level(BLINK, t) for t in (0.0, 0.05, 0.15, 0.25, 0.35)] == [1, 1, 0, 1, 0]
    assert pattern_level(PULSE, 0.0) == 0.0
    assert pattern_level(PULSE, 0.1) == pytest.approx(0.5)
    assert pattern_level(PULSE, 0.2) == pytest.approx(1.0)
    assert pattern_level(PULSE, 0.3) == pytest.approx(0.5)
    assert pattern_level(PULSE, 0.4) == pytest.approx(0.0)


def _patterns(**overrides: LedPattern) -> dict[LedState, LedPattern]:
    patterns = dict(DEFAULT_PATTERNS)
    for name, pattern in overrides.items():
        patterns[LedState[name]] = pattern
    return patterns


def test_plain_led_timeline(factory: Any, gpio_time: SteppedTime) -> None:
    """LISTENING lights the LED; THINKING blinks it 0.1 s on / 0.1 s off; IDLE ends it."""
    driver = GpioLedDriver(27, pin_factory=factory, pwm=False)
    pin = factory.pin(27)
    leds = LedController(
        driver, ManualClock(), patterns=_patterns(THINKING=BLINK), initial=LedState.IDLE
    )
    pin.clear_states()
    leds.set_state(LedState.LISTENING)
    gpio_time.advance(0.1)
    leds.set_state(LedState.THINKING)
    assert [gpio_time.step() for _ in range(4)] == pytest.approx([0.2, 0.3, 0.4, 0.5])
    leds.set_state(LedState.IDLE)
    # Times are since the previous change. Listening turns the LED on at once;
    # thinking's blink starts lit, so the first "off" comes 0.1 + 0.1 s later;
    # idle turns it off at once.
    assert [s.state for s in pin.states] == [False, True, False, True, False, True, False]
    assert [s.timestamp for s in pin.states] == pytest.approx([0, 0, 0.2, 0.1, 0.1, 0.1, 0])
    assert pin.state == 0
    leds.close()


def test_plain_led_shows_a_pulse_as_a_blink(factory: Any, gpio_time: SteppedTime) -> None:
    """On for the fade-in, off for the fade-out: the pulse's rhythm, on gpiozero's
    own blink thread (stepped, so a loaded machine cannot stretch it)."""
    uneven = LedPattern(PatternKind.PULSE, fade_in_s=0.2, fade_out_s=0.3)
    driver = GpioLedDriver(27, pin_factory=factory, pwm=False)
    pin = factory.pin(27)
    pin.clear_states()
    driver.show(uneven, 0.0)
    assert [gpio_time.step() for _ in range(3)] == pytest.approx([0.2, 0.5, 0.7])
    driver.close()
    # Times are since the previous change; close() finds the LED off already.
    assert [s.state for s in pin.states] == [False, True, False, True, False]
    assert [s.timestamp for s in pin.states] == pytest.approx([0.0, 0.0, 0.2, 0.3, 0.2])


def test_pwm_led_solid_level_and_pulse(factory: Any, gpio_time: SteppedTime) -> None:
    driver = GpioLedDriver(27, pin_factory=factory, pwm=True)
    pin = factory.pin(27)
    driver.show(LedPattern(PatternKind.SOLID, level=0.2), 0.0)
    assert pin.state == pytest.approx(0.2)
    pin.clear_states()
    driver.show(PULSE, 0.0)
    for _ in range(10):  # one whole pulse: gpiozero fades in 25 steps a second
        gpio_time.step()
    driver.show(OFF, 0.0)
    # From the solid 0.2: dark, a fade up to full over 0.2 s, a fade down over 0.2 s.
    values = [0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.8, 0.6, 0.4, 0.2, 0.0]
    assert [s.state for s in pin.states] == pytest.approx(values)
    assert [s.timestamp for s in pin.states] == pytest.approx([0.0, 0.0] + [0.04] * 10)
    assert pin.state == 0.0
    driver.close()


def test_rgb_led_colours(factory: Any) -> None:
    driver = RgbLedDriver(5, 6, 13, pin_factory=factory)
    red, green, blue = (factory.pin(n) for n in (5, 6, 13))
    leds = LedController(driver, ManualClock(), initial=LedState.IDLE)
    leds.set_state(LedState.LISTENING)  # blue (0, 0.2, 1)
    assert (red.state, green.state, blue.state) == pytest.approx((0.0, 0.2, 1.0))
    leds.set_state(LedState.MUTED)  # red at 0.3
    assert (red.state, green.state, blue.state) == pytest.approx((0.3, 0.0, 0.0))
    leds.set_state(LedState.IDLE)
    assert (red.state, green.state, blue.state) == (0.0, 0.0, 0.0)
    leds.close()


def test_rgb_led_without_pwm_blinks_full_channels(factory: Any, gpio_time: SteppedTime) -> None:
    driver = RgbLedDriver(5, 6, 13, pin_factory=factory, pwm=False)
    red, green, blue = (factory.pin(n) for n in (5, 6, 13))
    red.clear_states()
    driver.show(LedPattern(PatternKind.BLINK, (1.0, 0.0, 0.0), 0.3, on_s=0.1, off_s=0.1), 0.0)
    assert [gpio_time.step() for _ in range(2)] == pytest.approx([0.1, 0.2])
    assert green.state == 0 and blue.state == 0  # a dim red is full red on on/off pins
    driver.close()
    assert [s.state for s in red.states] == [False, True, False, True, False]
    assert [s.timestamp for s in red.states] == pytest.approx([0.0, 0.0, 0.1, 0.1, 0.0])


def test_watchdog_returns_a_stuck_state_to_idle(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    driver = NullLedDriver()
    leds = LedController(driver, clock, limits_s={LedState.THINKING: 10.0})
    leds.set_state(LedState.THINKING)
    clock.advance(9.0)
    assert leds.tick() is LedState.THINKING
    leds.set_state(LedState.THINKING)  # confirmed by the coordinator: the timer restarts
    clock.advance(9.0)
    assert leds.tick() is LedState.THINKING
    clock.advance(1.5)
    with caplog.at_level(logging.WARNING, logger="huxleyd.hardware"):
        assert leds.tick() is LedState.IDLE
    assert driver.pattern == OFF
    assert leds.expired_count == 1
    (record,) = [r for r in caplog.records if getattr(r, "huxley_event", "") == "led_state_expired"]
    assert "state=thinking" in record.getMessage()


def test_states_without_a_limit_stay() -> None:
    clock = ManualClock()
    leds = LedController(NullLedDriver(), clock)
    for state in (LedState.MEDIA, LedState.OFFLINE, LedState.MUTED, LedState.BOOTING):
        leds.set_state(state)
        clock.advance(86400.0)
        assert leds.tick() is state
    assert leds.expired_count == 0


def test_default_limits_cover_listening_speaking_and_error() -> None:
    clock = ManualClock()
    leds = LedController(NullLedDriver(), clock)
    limits = LedLimits()
    for state, limit in (
        (LedState.LISTENING, limits.listening_s),
        (LedState.SPEAKING, limits.speaking_s),
        (LedState.ERROR, limits.error_s),
    ):
        leds.set_state(state)
        clock.advance(limit + 0.01)
        assert leds.tick() is LedState.IDLE
    assert leds.expired_count == 3


def state_now(leds: LedController) -> LedState:
    """``leds.state`` read afresh (mypy would keep the value an earlier assert narrowed)."""
    return leds.state


async def test_run_task_ticks_the_watchdog() -> None:
    sleeper = FakeSleeper()
    leds = LedController(
        NullLedDriver(), sleeper.clock, limits_s={LedState.ERROR: 1.0}, sleep=sleeper.sleep
    )
    leds.set_state(LedState.ERROR)
    task = asyncio.create_task(leds.run(period_s=0.04))
    try:
        await sleeper.advance(0.99)
        assert state_now(leds) is LedState.ERROR
        await sleeper.advance(0.02)
        assert state_now(leds) is LedState.IDLE
    finally:
        task.cancel()


class CountingDriver:
    """Counts shows and ticks: how often the controller woke up."""

    def __init__(self) -> None:
        self.shown: list[Any] = []
        self.ticks = 0

    def show(self, pattern: Any, now_s: float) -> None:
        self.shown.append(pattern)

    def tick(self, now_s: float) -> None:
        self.ticks += 1

    def close(self) -> None:
        pass


async def test_run_sleeps_while_static_but_still_expires_a_state_on_time() -> None:
    sleeper = FakeSleeper()
    driver = CountingDriver()
    leds = LedController(
        driver,
        sleeper.clock,
        limits_s={LedState.LISTENING: 0.15},
        initial=LedState.IDLE,
        sleep=sleeper.sleep,
    )
    task = asyncio.create_task(leds.run(period_s=0.01))
    try:
        await sleeper.advance(0.3)
        assert driver.ticks == 1, "idle (off) must not tick 25 times a second"
        leds.set_state(LedState.LISTENING)  # solid, with a 0.15 s limit
        await sleeper.advance(0.14)
        assert state_now(leds) is LedState.LISTENING and driver.ticks == 2
        await sleeper.advance(0.02)
        assert state_now(leds) is LedState.IDLE, "the static wait still ends at the limit"
        leds.set_state(LedState.THINKING)  # a blink: animated, ticks every period again
        ticks = driver.ticks
        await sleeper.advance(0.1)
        assert driver.ticks == ticks + 1 + 10  # the change wakes it, then every 0.01 s
    finally:
        task.cancel()
