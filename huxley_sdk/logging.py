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

_SECRET_MARKERS = ("api_key", "apikey", "secret", "token", "password", "authorization")


def redact(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the values of secret-looking fields, so keys never reach a log."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        lowered = key.lower()
        out[key] = "<redacted>" if any(m in lowered for m in _SECRET_MARKERS) else value
    return out


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

    def log(self, level: int, event: str, /, *, exc_info: bool = False, **fields: Any) -> None:
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

    def debug(self, event: str, /, **fields: Any) -> None:
        self.log(logging.DEBUG, event, **fields)

    def info(self, event: str, /, **fields: Any) -> None:
        self.log(logging.INFO, event, **fields)

    def warning(self, event: str, /, **fields: Any) -> None:
        self.log(logging.WARNING, event, **fields)

    def error(self, event: str, /, **fields: Any) -> None:
        self.log(logging.ERROR, event, **fields)

    def exception(self, event: str, /, **fields: Any) -> None:
        """Log at ERROR with the current exception's traceback."""
        self.log(logging.ERROR, event, exc_info=True, **fields)

    async def adebug(self, event: str, /, **fields: Any) -> None:
        self.log(logging.DEBUG, event, **fields)

    async def ainfo(self, event: str, /, **fields: Any) -> None:
        self.log(logging.INFO, event, **fields)

    async def awarning(self, event: str, /, **fields: Any) -> None:
        self.log(logging.WARNING, event, **fields)

    async def aerror(self, event: str, /, **fields: Any) -> None:
        self.log(logging.ERROR, event, **fields)

    async def aexception(self, event: str, /, **fields: Any) -> None:
        self.log(logging.ERROR, event, exc_info=True, **fields)


def get_logger(name: str, **bound: Any) -> EventLogger:
    """An :class:`EventLogger` over ``logging.getLogger(name)``."""
    return EventLogger(logging.getLogger(name), bound)
