"""Pin factory choice: explicit config wins, then gpiozero's environment
variable, then gpiozero's own order, then mock pins with one warning."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from gpiozero import Device, InputDevice
from gpiozero.exc import GPIOPinInUse
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.errors import ConfigError
from huxleyd.hardware.pins import choose_pin_factory, is_mock, pin_probe
from huxleyd.hardware.settings import HardwareSettings


@pytest.fixture(autouse=True)
def _restore_global_factory() -> Iterator[None]:
    """choose_pin_factory makes a mock factory gpiozero's global default; undo it."""
    previous = Device.pin_factory
    yield
    Device.pin_factory = previous


def _has_real_gpio() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            Device._default_pin_factory().close()
        except Exception:
            return False
    return True


def test_configured_mock_factory() -> None:
    factory, description = choose_pin_factory(HardwareSettings(pin_factory="mock"), env={})
    assert is_mock(factory)
    assert isinstance(factory, MockFactory) and factory.pin_class is MockPWMPin
    assert Device.pin_factory is factory  # see huxleyd.hardware.pins: gpiozero's SPI bus
    assert description == "mock (hardware.pin_factory)"


def test_environment_variable_is_gpiozeros_mechanism() -> None:
    factory, description = choose_pin_factory(
        HardwareSettings(), env={"GPIOZERO_PIN_FACTORY": "mock"}
    )
    assert isinstance(factory, MockFactory)
    assert "GPIOZERO_PIN_FACTORY" in description


def test_configured_factory_that_does_not_load_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        choose_pin_factory(
            HardwareSettings(pin_factory="no-such-factory"), env={}, config_file="/etc/h.toml"
        )
    assert err.value.key == "hardware.pin_factory" and err.value.file == "/etc/h.toml"
    assert "no-such-factory" in str(err.value)


def test_environment_factory_that_does_not_load_falls_back_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="huxleyd.hardware"):
        factory, description = choose_pin_factory(
            HardwareSettings(), env={"GPIOZERO_PIN_FACTORY": "no-such-factory"}
        )
    assert is_mock(factory)
    assert description.startswith("mock (fallback")
    warnings = [
        r for r in caplog.records if getattr(r, "huxley_event", "") == "pin_factory_fallback"
    ]
    assert len(warnings) == 1
    assert "no-such-factory" in warnings[0].getMessage()


@pytest.mark.skipif(_has_real_gpio(), reason="this machine has GPIO: no fallback to see")
def test_no_gpio_falls_back_to_mock_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="huxleyd.hardware"):
        factory, description = choose_pin_factory(HardwareSettings(), env={})
    assert is_mock(factory)
    assert "auto" in description
    # gpiozero warned once per factory it tried; we say it in one line.
    records = [r for r in caplog.records if r.name == "huxleyd.hardware"]
    assert len(records) == 1
    assert "lgpio" in records[0].getMessage()


def test_pin_probe_reports_a_busy_pin(factory: Any) -> None:
    probe = pin_probe(factory)
    probe(17)  # free: claimed and released
    probe(17)  # and free again afterwards
    holder = InputDevice(17, pin_factory=factory)
    with pytest.raises(GPIOPinInUse):
        probe(17)
    holder.close()
