"""Choosing gpiozero's pin factory: the real GPIO when there is one, mock pins otherwise.

Order, first that applies:

1. ``[hardware] pin_factory`` in the config: that factory, or a
   :class:`ConfigError` if it cannot be loaded (an explicit choice that
   silently became mock pins would be a speaker whose button does nothing).
2. ``GPIOZERO_PIN_FACTORY`` in the environment: gpiozero's own mechanism.
3. gpiozero's default order (lgpio first, which is what a Pi 5 needs).
4. None of them loads (a laptop, CI, a container): gpiozero's
   :class:`MockFactory`, and one warning in the log that says why.

Every device huxleyd creates is given the chosen factory explicitly. Mock
factories are also made gpiozero's global default: gpiozero 2.0.1's software
SPI bus (the mocked ReSpeaker LEDs) builds its base ``Device`` without the
factory it was given, and on a machine without GPIO that global lookup fails.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol

from gpiozero import Device, InputDevice
from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.errors import ConfigError
from huxleyd.hardware.settings import HardwareSettings
from huxleyd.logs import get_logger

log = get_logger("huxleyd.hardware")


class PinFactory(Protocol):
    """The part of gpiozero's ``Factory`` huxleyd relies on, typed at our seam.

    gpiozero ships no type hints, so this names what we use: ``spi`` (the
    APA102 LEDs' bus) directly, and what the devices we hand the factory to
    (``Button``, ``InputDevice``, ``DigitalOutputDevice``, the LED boards)
    call on it: ``pin`` for a line, ``reserve_pins``/``release_pins`` to claim
    and free it (how the doctor's probe finds a busy line), ``release_all``
    and ``close`` when they close. gpiozero's ``MockFactory`` and every
    factory it registers (lgpio, rpigpio, pigpio, native) satisfy it
    (``tests/hardware/test_pin_factory_protocol.py`` checks their
    signatures); mypy strict then refuses anything else at our seam.
    """

    def pin(self, name: Any, /) -> Any:
        """The ``gpiozero.Pin`` for ``name`` (a number or ``"GPIO17"``, ``"BOARD11"``)."""
        ...

    def spi(self, **spi_args: Any) -> Any:
        """A ``gpiozero.SPI`` for ``port``/``device`` or for explicit pins."""
        ...

    def reserve_pins(self, requester: Any, /, *names: Any) -> None:
        """Claim ``names`` for ``requester``; raises ``GPIOPinInUse`` if held."""
        ...

    def release_pins(self, reserver: Any, /, *names: Any) -> None:
        """Free the ``names`` that ``reserver`` claimed."""
        ...

    def release_all(self, reserver: Any, /) -> None:
        """Free every pin ``reserver`` claimed."""
        ...

    def close(self) -> None:
        """Release every pin and the factory's resources."""
        ...


def mock_factory(*, make_global: bool = False) -> PinFactory:
    """gpiozero's MockFactory with PWM-capable pins, so ``pwmled`` boards work mocked too.

    ``make_global`` also sets ``Device.pin_factory`` (see the module docstring).
    """
    factory: PinFactory = MockFactory(pin_class=MockPWMPin)
    if make_global:
        Device.pin_factory = factory
    return factory


def _load_named(name: str) -> PinFactory:
    """Instantiate the gpiozero factory registered under ``name`` (case-insensitive)."""
    if name.lower() == "mock":
        return mock_factory(make_global=True)
    return pin_factory_class(name)()


def pin_factory_class(name: str) -> Callable[[], PinFactory]:
    """The gpiozero factory class registered under ``name``, imported but not
    instantiated (no pin is opened): what ``--check-config`` can check.
    Raises LookupError (no such name) or what importing it raises."""
    group = entry_points(group="gpiozero_pin_factories")
    for candidate in (name, name.lower()):
        for ep in group:
            if ep.name == candidate:
                loaded: Callable[[], PinFactory] = ep.load()
                return loaded
    known = ", ".join(sorted({ep.name for ep in group}))
    raise LookupError(f"no gpiozero pin factory named {name!r} (installed: {known})")


def check_pin_factory(settings: HardwareSettings, *, config_file: str) -> None:
    """``hardware.pin_factory``, when set, names a factory that loads; the same
    lookup :func:`choose_pin_factory` makes, short of opening the pins."""
    name = settings.pin_factory
    if not name or name.lower() == "mock":
        return
    try:
        pin_factory_class(name)
    except Exception as exc:
        raise ConfigError(
            config_file, "hardware.pin_factory", f"{name!r} could not be loaded: {exc}"
        ) from exc


def choose_pin_factory(
    settings: HardwareSettings,
    *,
    env: Mapping[str, str] | None = None,
    config_file: str = "huxleyd.toml",
) -> tuple[PinFactory, str]:
    """Return ``(factory, description)``; the description says what was chosen and why.

    Raises :class:`ConfigError` (key ``hardware.pin_factory``) when the
    configured factory cannot be loaded; the environment and automatic
    choices fall back to mock pins instead, with one warning.
    """
    environ = os.environ if env is None else env
    if settings.pin_factory:
        try:
            factory = _load_named(settings.pin_factory)
        except Exception as exc:
            raise ConfigError(
                config_file,
                "hardware.pin_factory",
                f"{settings.pin_factory!r} could not be loaded: {exc}",
            ) from exc
        return factory, f"{settings.pin_factory} (hardware.pin_factory)"
    chosen_by = "GPIOZERO_PIN_FACTORY" if environ.get("GPIOZERO_PIN_FACTORY") else "auto"
    with warnings.catch_warnings(record=True) as caught:
        # gpiozero warns once per factory it skips; we fold them into one line.
        warnings.simplefilter("always")
        try:
            if chosen_by == "auto":
                factory = Device._default_pin_factory()
            else:
                factory = _load_named(environ["GPIOZERO_PIN_FACTORY"])
        except Exception as exc:
            reasons = [str(w.message) for w in caught] + [str(exc)]
            log.warning(
                "pin_factory_fallback",
                factory="mock",
                chosen_by=chosen_by,
                reason="; ".join(reasons),
                hint="no GPIO found: the button and LEDs are simulated",
            )
            return mock_factory(make_global=True), f"mock (fallback: no GPIO; {chosen_by} failed)"
    name = type(factory).__name__.removesuffix("Factory").lower()
    return factory, f"{name} ({chosen_by})"


def pin_probe(factory: PinFactory) -> Callable[[int], None]:
    """A ``probe(pin)`` for ``huxleyctl doctor``: claims the pin as an input and lets it go.

    Raises (gpiozero's ``GPIOPinInUse``, or the lgpio "GPIO busy" error) when
    something holds the line, which is what the doctor reports.
    """

    def probe(pin: int) -> None:
        InputDevice(pin, pin_factory=factory).close()

    return probe


def is_mock(factory: PinFactory) -> bool:
    """True for gpiozero's MockFactory (remote PTT then drives the mock pin)."""
    return isinstance(factory, MockFactory)
