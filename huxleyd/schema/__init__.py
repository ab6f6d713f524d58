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
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from huxleyd.errors import ConfigError
from huxleyd.schema.names import unknown_name_hint

T = TypeVar("T")


def bounds(minimum: float | None = None, maximum: float | None = None) -> dict[str, Any]:
    """Field metadata: the inclusive range a number must lie in."""
    return {"min": minimum, "max": maximum}


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


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


@dataclasses.dataclass(frozen=True, slots=True)
class _At:
    """Where a value sits: the file, its dotted key, and its field's metadata."""

    file: str
    key: str
    meta: Mapping[str, Any]

    def below(self, key: str) -> _At:
        return _At(self.file, key, self.meta)

    def wrong(self, tp: Any, value: object) -> ConfigError:
        return ConfigError(
            self.file, self.key, f"expected {_describe(tp)}, got {_type_name(value)} {value!r}"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Kind:
    """One kind of field type: how a TOML value becomes it, and how a message names it."""

    convert: Callable[[Any, Any, _At], Any]
    describe: Callable[[Any], str]


def _describe(tp: Any) -> str:
    return _kind(tp).describe(tp)


def _convert(value: Any, tp: Any, *, file: str, key: str, meta: Mapping[str, Any]) -> Any:
    return _kind(tp).convert(value, tp, _At(file, key, meta))


def _to_union(value: Any, tp: Any, at: _At) -> Any:
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    errors: list[ConfigError] = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _kind(arg).convert(value, arg, at)
        except ConfigError as exc:
            errors.append(exc)
    if len(errors) == 1:  # ``X | None``: X's own message (a bound, a NUL) says more
        raise errors[0]
    raise at.wrong(tp, value)


def _to_literal(value: Any, tp: Any, at: _At) -> Any:
    choices = typing.get_args(tp)
    if value not in choices:
        if isinstance(value, str):  # a look-alike letter: name it, and what was meant
            hint = unknown_name_hint(value, (c for c in choices if isinstance(c, str)))
            if hint:
                raise ConfigError(at.file, at.key, f"expected {_one_of(tp)}, got {value!r}{hint}")
        raise at.wrong(tp, value)
    return value


def _to_enum(value: Any, tp: Any, at: _At) -> Any:
    try:
        return tp(value)
    except ValueError:
        raise at.wrong(tp, value) from None


def _to_bool(value: Any, tp: Any, at: _At) -> Any:
    if not isinstance(value, bool):
        raise at.wrong(tp, value)
    return value


def _span(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"between {low} and {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def _to_number(value: Any, tp: Any, at: _At) -> Any:
    # TOML's true is no number; an int field takes no float (1.5 or 1.0).
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise at.wrong(tp, value)
    if tp is int and not isinstance(value, int):
        raise at.wrong(tp, value)
    number = tp(value)
    if not math.isfinite(number):  # nan passes every comparison; inf is no setting
        raise ConfigError(at.file, at.key, f"expected a finite number, got {value!r}")
    low, high = at.meta.get("min"), at.meta.get("max")
    if (low is not None and number < low) or (high is not None and number > high):
        raise ConfigError(at.file, at.key, f"expected a value {_span(low, high)}, got {value!r}")
    return number


def _to_text(value: Any, tp: Any, at: _At) -> Any:
    if not isinstance(value, str) or (tp is Path and not value):
        raise at.wrong(tp, value)
    if "\x00" in value:  # no name, path or text of ours can hold one (the OS refuses it)
        raise ConfigError(at.file, at.key, "expected text without a NUL character (\\u0000)")
    return value if tp is str else Path(value)


def _to_tuple(value: Any, tp: Any, at: _At) -> Any:
    if not isinstance(value, list):
        raise at.wrong(tp, value)
    item = typing.get_args(tp)[0]
    convert = _kind(item).convert
    return tuple(convert(v, item, at.below(f"{at.key}[{i}]")) for i, v in enumerate(value))


def _to_dict(value: Any, tp: Any, at: _At) -> Any:
    if not isinstance(value, dict):
        raise at.wrong(tp, value)
    key_tp, value_tp = typing.get_args(tp)
    keys = {k: _dict_key(k, key_tp, file=at.file, key=at.key) for k in value}
    if value_tp is Any:
        return {keys[k]: v for k, v in value.items()}
    convert = _kind(value_tp).convert
    return {keys[k]: convert(v, value_tp, at.below(f"{at.key}.{k}")) for k, v in value.items()}


def _to_settings(value: Any, tp: Any, at: _At) -> Any:
    if not isinstance(value, dict):
        raise at.wrong(tp, value)
    return build(tp, value, file=at.file, prefix=at.key)


def _as_is(value: Any, tp: Any, at: _At) -> Any:
    return value


def _unsupported(value: Any, tp: Any, at: _At) -> Any:
    raise TypeError(f"settings field {at.key} has unsupported type {tp!r}")


def _one_of(tp: Any) -> str:
    values = (
        typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else [m.value for m in tp]
    )
    return "one of " + ", ".join(repr(v) for v in values)


_UNION = _Kind(_to_union, lambda tp: " or ".join(_describe(a) for a in typing.get_args(tp)))
_LITERAL = _Kind(_to_literal, _one_of)
_ENUM = _Kind(_to_enum, _one_of)
_BOOL = _Kind(_to_bool, _TYPE_NAMES.__getitem__)
_NUMBER = _Kind(_to_number, _TYPE_NAMES.__getitem__)
_TEXT = _Kind(_to_text, lambda tp: _TYPE_NAMES[tp] if tp is str else "a path string")
_TUPLE = _Kind(_to_tuple, lambda tp: f"a list of {_describe(typing.get_args(tp)[0])}")
_DICT = _Kind(_to_dict, lambda tp: f"a table of {_describe(typing.get_args(tp)[1])}")
_SETTINGS = _Kind(_to_settings, lambda tp: "a table")
_ANY = _Kind(_as_is, str)
_UNSUPPORTED = _Kind(_unsupported, str)


def _kind(tp: Any) -> _Kind:
    """The one place a field type is classified: converting and describing agree."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _UNION
    if origin is typing.Literal:
        return _LITERAL
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _ENUM
    if tp is bool:
        return _BOOL
    if tp is int or tp is float:
        return _NUMBER
    if tp is str or tp is Path:
        return _TEXT
    if origin is tuple:
        return _TUPLE
    if origin is dict:
        return _DICT
    if tp is Any:
        return _ANY
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _SETTINGS
    return _UNSUPPORTED


def _dict_key(name: str, tp: Any, *, file: str, key: str) -> Any:
    """A table's key as ``tp``: a str, or an Enum member by value (one that
    names something, like a persona string: an unknown name is refused)."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(name)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            hint = unknown_name_hint(name, (str(m.value) for m in tp))
            raise ConfigError(
                file, f"{key}.{name}", f"unknown key (expected one of: {allowed}){hint}"
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
            hint = unknown_name_hint(key, known)
            raise ConfigError(
                file, dotted + key, f"unknown key (expected one of: {expected}){hint}"
            )
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
