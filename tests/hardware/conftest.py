"""Fixtures: a fresh gpiozero MockFactory per test (PWM-capable pins), and
gpiozero's animation time stepped by the test (:mod:`tests.fakes.gpio_time`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gpiozero.output_devices
import gpiozero.pins.mock
import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory

from huxleyd.hardware.pins import mock_factory
from tests.fakes.gpio_time import SteppedTime, stepped_thread_class


@pytest.fixture
def factory() -> Iterator[Any]:
    pins = mock_factory()
    assert isinstance(pins, MockFactory)  # reset() is the mock's own
    yield pins
    pins.reset()
    pins.close()


@pytest.fixture
def plain_factory() -> Iterator[Any]:
    """A MockFactory with plain (non-PWM) pins, as gpiozero's MockSPIDevice needs,
    made gpiozero's global default as choose_pin_factory does for mocks.

    gpiozero 2.0.1's software SPI bus builds its Device base without the
    pin_factory it was given, so it looks up the global one.
    """
    previous = Device.pin_factory
    pins = MockFactory()
    Device.pin_factory = pins
    yield pins
    Device.pin_factory = previous
    pins.reset()
    pins.close()


@pytest.fixture
def gpio_time(monkeypatch: pytest.MonkeyPatch) -> SteppedTime:
    """gpiozero's blink/pulse threads and mock pin timestamps on a clock the test steps."""
    time = SteppedTime()
    monkeypatch.setattr(gpiozero.pins.mock, "monotonic", time.monotonic)
    thread = stepped_thread_class(time, gpiozero.output_devices.GPIOThread)
    monkeypatch.setattr(gpiozero.output_devices, "GPIOThread", thread)
    return time
