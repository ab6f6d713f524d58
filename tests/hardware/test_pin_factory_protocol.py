"""gpiozero's own factories satisfy huxleyd's ``PinFactory`` protocol.

gpiozero ships no type hints, so mypy cannot check this: the test binds a
call of every protocol method, shaped by the protocol's own signature,
against each real factory class gpiozero registers (lgpio, mock, native,
pigpio, rpigpio). The factories whose C library is absent here (lgpio,
pigpio, RPi.GPIO) are loaded in a child process with that library stubbed,
so this process's gpiozero never sees the stub.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from huxleyd.hardware.pins import PinFactory, mock_factory

ROOT = Path(__file__).resolve().parents[2]
GPIO_LIBRARIES = ("lgpio", "pigpio", "RPi", "RPi.GPIO")
EXPECTED = {"lgpio", "mock", "native", "pigpio", "rpigpio"}


def protocol_members() -> list[str]:
    return sorted(
        name
        for name, value in vars(PinFactory).items()
        if inspect.isfunction(value) and not name.startswith("_")
    )


def _call_shape(name: str) -> tuple[list[object], dict[str, object]]:
    """Arguments for one call of ``PinFactory.name``, as its signature allows
    (two values for a ``*names``, SPI's ``port``/``device`` for ``**kwargs``)."""
    args: list[object] = []
    kwargs: dict[str, object] = {}
    params = list(inspect.signature(getattr(PinFactory, name)).parameters.values())[1:]
    for param in params:
        if param.kind is param.VAR_POSITIONAL:
            args += [17, 27]
        elif param.kind is param.VAR_KEYWORD:
            kwargs.update(port=0, device=0)
        elif param.kind is param.KEYWORD_ONLY:
            kwargs[param.name] = object()
        else:
            args.append(object())
    return args, kwargs


def mismatches(cls: type) -> list[str]:
    """``Class.member: why`` for every protocol member ``cls`` lacks or cannot take."""
    found: list[str] = []
    for name in protocol_members():
        attr = inspect.getattr_static(cls, name, None)
        if attr is None:
            found.append(f"{cls.__name__}.{name}: missing")
            continue
        args, kwargs = _call_shape(name)
        if isinstance(attr, staticmethod):
            target = attr.__func__
        else:
            target, args = attr, [object(), *args]  # the instance as self
        try:
            inspect.signature(target).bind(*args, **kwargs)
        except TypeError as exc:
            found.append(f"{cls.__name__}.{name}: {exc}")
    return found


def report() -> None:
    """Child process: stub the GPIO C libraries, print ``{factory: mismatches}``."""
    from unittest import mock

    for lib in GPIO_LIBRARIES:
        sys.modules[lib] = mock.MagicMock(name=lib)
    result = {ep.name: mismatches(ep.load()) for ep in entry_points(group="gpiozero_pin_factories")}
    print(json.dumps(result))


def test_every_registered_gpiozero_factory_satisfies_the_protocol() -> None:
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tests.hardware.test_pin_factory_protocol import report; report()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[str]] = json.loads(child.stdout)
    assert set(result) >= EXPECTED, f"gpiozero registers {sorted(result)}"
    assert {name: found for name, found in result.items() if found} == {}


def test_the_mock_factory_we_build_satisfies_it() -> None:
    factory = mock_factory()
    try:
        assert mismatches(type(factory)) == []
        factory.reserve_pins(factory, 17)
        factory.release_all(factory)
    finally:
        factory.close()


def test_the_check_names_a_factory_that_does_not_fit() -> None:
    class Partial:
        def pin(self) -> Any:  # takes no pin name
            return None

        def close(self) -> None:
            return None

    found = mismatches(Partial)
    assert "Partial.spi: missing" in found
    assert "Partial.reserve_pins: missing" in found
    assert any(line.startswith("Partial.pin: too many positional") for line in found)
    assert not any(line.startswith("Partial.close") for line in found)


def test_the_protocol_names_what_huxleyd_uses() -> None:
    assert protocol_members() == [
        "close",
        "pin",
        "release_all",
        "release_pins",
        "reserve_pins",
        "spi",
    ]
