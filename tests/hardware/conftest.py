"""Fixtures: a fresh gpiozero MockFactory per test (PWM-capable pins)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory

from huxleyd.hardware.pins import mock_factory


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
