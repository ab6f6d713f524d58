"""Logging: named loggers, one event per line, journald fields.

The one logging path of huxleyd. Code logs through :func:`get_logger`, an
:class:`EventLogger` (a stdlib logger that speaks in events and fields)::

    log = get_logger("huxleyd.turns")
    log.info("turn_done", turn=turn_id, tool="set_volume", outcome="ok")

A skill gets the same logger bound to ``skill=<name>``; it sees only the
SDK's ``SkillLogger`` Protocol (Huxley's five async methods, plus the sync
ones huxleyd adds). Both call styles work::

    ctx.logger.info("book_started", book_id=book_id)
    await ctx.logger.ainfo("book_started", book_id=book_id)

Under systemd the :class:`JournalFieldsHandler` sends each event with its
fields as journal fields (``HUXLEY_TURN=…``, ``HUXLEY_TOOL=…``) plus
``HUXLEY_EVENT``; elsewhere events go to stderr as ``event k=v`` lines.
One fact, one event: ``journalctl HUXLEY_EVENT=claim_started`` counts
claims. Secret-named fields are redacted before any handler sees them.
Never log from the audio thread (conventions rule 4, docs/conventions.md).

A fault that repeats (a missing sound card retried every few seconds, a
flapping network) must not flood the journal: :class:`RepeatLimiter` lets
the first :data:`REPEAT_BURST` warnings or errors of one event through per
:data:`REPEAT_WINDOW_S`, drops the rest, and says how many it dropped on the
next line of that event that passes.
"""

from __future__ import annotations

import importlib
import logging
import logging.handlers
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "EVENT_ATTR",
    "FIELDS_ATTR",
    "EventLogger",
    "JournalFieldsHandler",
    "RepeatLimiter",
    "get_logger",
    "journal_field_name",
    "setup",
]

FIELDS_ATTR = "huxley_fields"
"""Name of the LogRecord attribute carrying the event's fields."""
EVENT_ATTR = "huxley_event"
"""Name of the LogRecord attribute carrying the event's name (``HUXLEY_EVENT``)."""

# Not a bare "key": such a field names a setting ("provider.api_key") or a
# dedup key, and hiding it hides which setting is wrong. Secret values in
# any field are caught by their shape below.
_SECRET_NAMES = frozenset({"token", "secret", "password", "authorization", "apikey"})
_SECRET_SUFFIXES = ("_token", "api_key", "_secret", "_password", "_authorization")
_SECRET_VALUE = re.compile(
    r"\bsk-[A-Za-z0-9_-]{16,}"  # OpenAI (sk-, sk-proj-...)
    r"|\bxai-[A-Za-z0-9_-]{16,}"  # xAI
    r"|\bAIza[A-Za-z0-9_-]{30,}"  # Google (Gemini)
    r"|\bBearer\s+\S+"
)
"""API keys by their shape, wherever they are: a key pasted into the wrong
setting ends up in an error message, under a field of any name."""
REDACTED = "<redacted>"


def is_secret_field(key: str) -> bool:
    """``api_key``, ``auth_token``, ``password``… but not ``input_tokens``,
    ``dedup_key`` or a plain ``key`` (a setting's name)."""
    lowered = key.lower()
    return lowered in _SECRET_NAMES or lowered.endswith(_SECRET_SUFFIXES)


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRET_VALUE.sub(REDACTED, value)
    if isinstance(value, (list, tuple)):
        return [_redact_value(v) for v in value]
    return value


def redact(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Secret-named fields hidden whole; key-shaped text hidden in every other."""
    return {k: REDACTED if is_secret_field(k) else _redact_value(v) for k, v in fields.items()}


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
            extra={FIELDS_ATTR: merged, EVENT_ATTR: event},
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


REPEAT_BURST = 10
"""Lines of one event (logger, level, event name) let through per window."""
REPEAT_WINDOW_S = 60.0


class RepeatLimiter(logging.Filter):
    """Drop the repeats of one event past a burst per window; count them.

    Only WARNING and above are limited (a fault repeats there; the INFO
    trail of turns and states stays whole). An event is (logger, level,
    event name; the message for plain records).
    The first line that passes after some were dropped carries
    ``suppressed_repeats=N``. ``monotonic`` is injectable (tests).
    """

    def __init__(
        self,
        *,
        burst: int = REPEAT_BURST,
        window_s: float = REPEAT_WINDOW_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._burst = burst
        self._window_s = window_s
        self._monotonic = monotonic
        self._seen: dict[tuple[str, int, str], tuple[float, int, int]] = {}
        """key → (window start, lines passed in it, lines dropped since the last pass)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        event = getattr(record, EVENT_ATTR, None)
        key = (record.name, record.levelno, str(event if event is not None else record.msg))
        now = self._monotonic()
        start, passed, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self._window_s:
            start, passed = now, 0
        if passed >= self._burst:
            self._seen[key] = (start, passed, dropped + 1)
            return False
        self._seen[key] = (start, passed + 1, 0)
        if dropped:
            self._note_dropped(record, dropped)
        if len(self._seen) > 4096:  # bounded: forget windows long over
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self._window_s}
        return True

    @staticmethod
    def _note_dropped(record: logging.LogRecord, dropped: int) -> None:
        fields = getattr(record, FIELDS_ATTR, None)
        if isinstance(fields, dict):
            setattr(record, FIELDS_ATTR, {**fields, "suppressed_repeats": dropped})
        record.msg = f"{record.msg} suppressed_repeats={dropped}"


JournalSender = Callable[..., Any]
"""``systemd.journal.send``-compatible: ``send(MESSAGE, **FIELDS)``."""

_FIELD_RE = re.compile(r"[^A-Z0-9_]")

# syslog priorities, as journald expects them in PRIORITY.
_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


def journal_field_name(key: str) -> str:
    """``turn`` → ``HUXLEY_TURN``; journald field names are ``[A-Z0-9_]``."""
    return "HUXLEY_" + _FIELD_RE.sub("_", key.upper())


class JournalFieldsHandler(logging.Handler):
    """Sends records to journald with their event fields as journal fields.

    The sender is injected (tests pass a recorder); the default is
    ``systemd.journal.send``.
    """

    def __init__(self, sender: JournalSender, *, identifier: str = "huxleyd") -> None:
        super().__init__()
        self._send = sender
        self._identifier = identifier

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # systemd.journal.send() takes CODE_FILE, CODE_LINE and
            # CODE_FUNC as its own parameters and formats CODE_LINE with
            # "{:d}": it must be an int (a str raises ValueError, and every
            # record is lost). Other fields may be str or bytes.
            fields: dict[str, str | int] = {
                "PRIORITY": str(_PRIORITY.get(record.levelno, 6)),
                "SYSLOG_IDENTIFIER": self._identifier,
                "LOGGER": record.name,
                "CODE_FILE": record.pathname,
                "CODE_LINE": record.lineno,
                "CODE_FUNC": record.funcName,
            }
            event = getattr(record, EVENT_ATTR, None)
            if event:
                fields["HUXLEY_EVENT"] = str(event)
            for key, value in (getattr(record, FIELDS_ATTR, None) or {}).items():
                fields[journal_field_name(key)] = "" if value is None else str(value)
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + logging.Formatter().formatException(record.exc_info)
            self._send(message, **fields)
        except Exception:
            self.handleError(record)


def _default_journal_sender() -> JournalSender | None:
    try:
        journal = importlib.import_module("systemd.journal")
    except ImportError:
        return None
    send: JournalSender = journal.send
    return send


def running_under_systemd() -> bool:
    """True when stderr is connected to the journal (systemd sets JOURNAL_STREAM)."""
    return bool(os.environ.get("JOURNAL_STREAM"))


LOG_FILE_NAME = "huxleyd.log"
"""The daemon's own log in its state directory, written when there is no
journal (``huxleyctl logs`` reads it then)."""
LOG_FILE_BYTES = 1_000_000
LOG_FILE_BACKUPS = 2
"""Bound: at most three files of 1 MB; the oldest is dropped."""


class LogFileHandler(logging.handlers.RotatingFileHandler):
    """The log file, which says on stderr once that it cannot be written (a full
    disk, a read-only card) and once that it is written again, instead of
    Python's "--- Logging error ---" traceback for every record in between."""

    failing: str | None = None
    """Why the last record was not written (the OS's words), or None."""
    _written = True

    def emit(self, record: logging.LogRecord) -> None:
        self._written = True
        super().emit(record)  # a failure lands in handleError, which clears _written
        if self._written and self.failing is not None:
            self.failing = None
            print(f"huxleyd: writing {self.baseFilename} again", file=sys.stderr)

    def handleError(self, record: logging.LogRecord) -> None:
        self._written = False
        exc = sys.exc_info()[1]
        why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or "error"
        if self.failing is None:
            print(
                f"huxleyd: not writing {self.baseFilename}: {why} (said once; the other "
                "log outputs go on)",
                file=sys.stderr,
            )
        self.failing = why


def add_log_file(path: Path) -> logging.Handler | None:
    """Also write the log to ``path`` (rotated, bounded). None, with a line on
    stderr, when the file cannot be opened: a log file is never a reason not
    to start."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = LogFileHandler(
            path, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
    except OSError as exc:
        print(f"huxleyd: not writing {path}: {exc.strerror or exc}", file=sys.stderr)
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.getLogger().addHandler(handler)
    return handler


def setup(
    level: str | int = "INFO",
    *,
    journal: bool | None = None,
    sender: JournalSender | None = None,
) -> logging.Handler:
    """Install one handler on the ``huxleyd`` and ``huxley`` logger roots.

    ``journal=None`` chooses journald when running under systemd and
    systemd-python is importable, stderr otherwise. Returns the handler.
    """
    use_journal = running_under_systemd() if journal is None else journal
    handler: logging.Handler
    chosen = sender or (_default_journal_sender() if use_journal else None)
    if use_journal and chosen is not None:
        handler = JournalFieldsHandler(chosen)
    else:
        handler = logging.StreamHandler(sys.stderr)
        # journald stamps its own time; a terminal wants one.
        fmt = "%(levelname)s %(name)s %(message)s"
        if not running_under_systemd():
            fmt = "%(asctime)s " + fmt
        handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(RepeatLimiter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    return handler
