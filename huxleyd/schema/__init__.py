"""Typed TOML → frozen dataclass conversion, with errors that name the key.

Each subsystem declares its settings as a frozen dataclass whose fields have
defaults and, where it matters, bounds in their metadata::

    @dataclass(frozen=True, slots=True, kw_only=True)
    class AudioSettings:
        period_ms: int = field(default=20, metadata=bounds(5, 100))

:func:`build` turns a TOML table into that dataclass, checking every key:
unknown keys, wrong types and out-of-range values raise
:class:`~huxleyd.errors.ConfigError` naming the file and the dotted key.

Supported field types: ``str``, ``int``, ``float``, ``bool``, ``Path``,
``Literal[...]``, ``Enum`` subclasses (by value), ``X | None``,
``tuple[X, ...]``, ``dict[str, X]`` (or ``dict[SomeEnum, X]``: keys by value)
and nested settings dataclasses.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from huxleyd.errors import ConfigError

T = TypeVar("T")


def bounds(minimum: float | None = None, maximum: float | None = None) -> dict[str, Any]:
    """Field metadata: the inclusive range a number must lie in."""
    return {"min": minimum, "max": maximum}


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _describe(tp: Any) -> str:
    if tp in _TYPE_NAMES:
        return _TYPE_NAMES[tp]
    if tp is Path:
        return "a path string"
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    if origin is tuple:
        return f"a list of {_describe(typing.get_args(tp)[0])}"
    if origin is dict:
        return f"a table of {_describe(typing.get_args(tp)[1])}"
    if dataclasses.is_dataclass(tp):
        return "a table"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp))
    return str(tp)


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _convert(value: Any, tp: Any, *, file: str, key: str, meta: Mapping[str, Any]) -> Any:
    def wrong() -> ConfigError:
        return ConfigError(
            file, key, f"expected {_describe(tp)}, got {_type_name(value)} {value!r}"
        )

    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors: list[ConfigError] = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, file=file, key=key, meta=meta)
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise wrong()
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            raise wrong()
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise wrong() from None
    if tp is bool:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if tp is int or tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong()
        if tp is int and not isinstance(value, int):
            raise wrong()
        number = tp(value)
        low, high = meta.get("min"), meta.get("max")
        if (low is not None and number < low) or (high is not None and number > high):
            span = (
                f"between {low} and {high}"
                if low is not None and high is not None
                else (f"at least {low}" if low is not None else f"at most {high}")
            )
            raise ConfigError(file, key, f"expected a value {span}, got {value!r}")
        return number
    if tp is str or tp is Path:
        if not isinstance(value, str) or (tp is Path and not value):
            raise wrong()
        if "\x00" in value:  # no name, path or text of ours can hold one (the OS refuses it)
            raise ConfigError(file, key, "expected text without a NUL character (\\u0000)")
        return value if tp is str else Path(value)
    if origin is tuple:
        if not isinstance(value, list):
            raise wrong()
        item_tp = typing.get_args(tp)[0]
        return tuple(
            _convert(v, item_tp, file=file, key=f"{key}[{i}]", meta=meta)
            for i, v in enumerate(value)
        )
    if origin is dict:
        if not isinstance(value, dict):
            raise wrong()
        key_tp, value_tp = typing.get_args(tp)
        keys = {k: _dict_key(k, key_tp, file=file, key=key) for k in value}
        if value_tp is Any:
            return {keys[k]: v for k, v in value.items()}
        return {
            keys[k]: _convert(v, value_tp, file=file, key=f"{key}.{k}", meta=meta)
            for k, v in value.items()
        }
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise wrong()
        return build(tp, value, file=file, prefix=key)
    raise TypeError(f"settings field {key} has unsupported type {tp!r}")


def _dict_key(name: str, tp: Any, *, file: str, key: str) -> Any:
    """A table's key as ``tp``: a str, or an Enum member by value (one that
    names something, like a persona string: an unknown name is refused)."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(name)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            raise ConfigError(
                file, f"{key}.{name}", f"unknown key (expected one of: {allowed})"
            ) from None
    return name


def build(cls: type[T], table: Mapping[str, Any], *, file: str, prefix: str = "") -> T:
    """Build the settings dataclass ``cls`` from a TOML ``table``.

    ``prefix`` is the dotted path of ``table`` in the file, for messages.
    """
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    dotted = (prefix + ".") if prefix else ""
    for key in table:
        if key not in known:
            expected = ", ".join(sorted(known)) or "no keys"
            raise ConfigError(file, dotted + key, f"unknown key (expected one of: {expected})")
    kwargs: dict[str, Any] = {}
    for name, fld in known.items():
        if name not in table:
            if fld.default is dataclasses.MISSING and fld.default_factory is dataclasses.MISSING:
                raise ConfigError(
                    file, dotted + name, f"missing; expected {_describe(hints[name])}"
                )
            continue
        kwargs[name] = _convert(
            table[name], hints[name], file=file, key=dotted + name, meta=fld.metadata
        )
    try:
        return cls(**kwargs)
    except ValueError as exc:  # a __post_init__ cross-field check
        raise ConfigError(file, prefix, str(exc)) from exc
