"""Structured event logging for skills (and the daemon, which shares it).

One event per line: an event name plus ``key=value`` fields. Under systemd
the daemon sends the fields to journald as ``HUXLEY_<KEY>`` journal fields,
so ``journalctl -u huxleyd HUXLEY_TOOL=set_volume`` works.

Both call styles of the Huxley documentation are supported::

    ctx.logger.info("book_started", book_id=book_id)
    await ctx.logger.ainfo("book_started", book_id=book_id)

The async forms exist for code that logs from coroutines; they do not
block the loop any more than the sync forms (handlers are cheap and the
journald send is a datagram).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

FIELDS_ATTR = "huxley_fields"
"""Name of the LogRecord attribute carrying the event's fields."""

_SECRET_NAMES = frozenset({"token", "key", "secret", "password", "authorization", "apikey"})
_SECRET_SUFFIXES = ("_token", "api_key", "_secret", "_password", "_authorization")


def is_secret_field(key: str) -> bool:
    """``api_key``, ``auth_token``, ``password``… but not ``input_tokens`` or ``dedup_key``."""
    lowered = key.lower()
    return lowered in _SECRET_NAMES or lowered.endswith(_SECRET_SUFFIXES)


def redact(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the values of secret-named fields, so keys never reach a log."""
    return {k: "<redacted>" if is_secret_field(k) else v for k, v in fields.items()}


def format_value(value: object) -> str:
    """Render one field value so that ``key=value`` stays one token."""
    text = value if isinstance(value, str) else repr(value) if value is None else str(value)
    if text == "" or any(c.isspace() or c in '"=' for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def format_event(event: str, fields: Mapping[str, Any]) -> str:
    """``event k=v k2="v two"`` — the one-line form used on stderr and as MESSAGE."""
    if not fields:
        return event
    return event + " " + " ".join(f"{k}={format_value(v)}" for k, v in fields.items())


class EventLogger:
    """A stdlib logger that speaks in events and fields.

    ``bind(**fields)`` returns a logger whose events all carry those fields
    (a skill's logger is bound to ``skill=<name>``).
    """

    __slots__ = ("_bound", "_logger")

    def __init__(self, logger: logging.Logger, bound: Mapping[str, Any] | None = None) -> None:
        self._logger = logger
        self._bound: dict[str, Any] = dict(bound or {})

    @property
    def name(self) -> str:
        return self._logger.name

    @property
    def stdlib(self) -> logging.Logger:
        """The underlying :class:`logging.Logger`."""
        return self._logger

    def bind(self, **fields: Any) -> EventLogger:
        return EventLogger(self._logger, {**self._bound, **fields})

    def is_enabled_for(self, level: int) -> bool:
        """Cheap guard for hot paths: ``if log.is_enabled_for(DEBUG): ...``."""
        return self._logger.isEnabledFor(level)

    def _emit(self, level: int, event: str, fields: dict[str, Any], exc_info: bool) -> None:
        # Called only from the public methods, one frame below the caller:
        # stacklevel 3 = _emit -> public method -> the caller's line.
        if not self._logger.isEnabledFor(level):
            return
        merged = redact({**self._bound, **fields})
        self._logger.log(
            level,
            "%s",
            format_event(event, merged),
            exc_info=exc_info,
            extra={FIELDS_ATTR: merged, "huxley_event": event},
            stacklevel=3,
        )

    def log(self, level: int, event: str, /, *, exc_info: bool = False, **fields: Any) -> None:
        self._emit(level, event, fields, exc_info)

    def debug(self, event: str, /, **fields: Any) -> None:
        self._emit(logging.DEBUG, event, fields, False)

    def info(self, event: str, /, **fields: Any) -> None:
        self._emit(logging.INFO, event, fields, False)

    def warning(self, event: str, /, **fields: Any) -> None:
        self._emit(logging.WARNING, event, fields, False)

    def error(self, event: str, /, **fields: Any) -> None:
        self._emit(logging.ERROR, event, fields, False)

    def exception(self, event: str, /, **fields: Any) -> None:
        """Log at ERROR with the current exception's traceback."""
        self._emit(logging.ERROR, event, fields, True)

    # The async forms take ``event`` by keyword too, like Huxley's SkillLogger.
    async def adebug(self, event: str, **fields: Any) -> None:
        self._emit(logging.DEBUG, event, fields, False)

    async def ainfo(self, event: str, **fields: Any) -> None:
        self._emit(logging.INFO, event, fields, False)

    async def awarning(self, event: str, **fields: Any) -> None:
        self._emit(logging.WARNING, event, fields, False)

    async def aerror(self, event: str, **fields: Any) -> None:
        self._emit(logging.ERROR, event, fields, False)

    async def aexception(self, event: str, **fields: Any) -> None:
        self._emit(logging.ERROR, event, fields, True)


def get_logger(name: str, **bound: Any) -> EventLogger:
    """An :class:`EventLogger` over ``logging.getLogger(name)``."""
    return EventLogger(logging.getLogger(name), bound)
