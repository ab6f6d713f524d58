"""Whether the state directory takes writes, told by the writes themselves.

Layer: storage (a look at the filesystem when a write fails, no daemon
state). :class:`~huxleyd.storage.db.Database` hands every transaction's
outcome to its ``on_writes`` listener: a :class:`WriteFailure` when SQLite
could not write (a full disk, a read-only mount, a permission, an I/O
error), ``None`` when a transaction that changed rows committed. The
start's listener (:func:`degraded_writes`) turns that into the degraded
record's ``storage`` part (``storage: writes failing: No space left on
device``) and clears it at the next write that works: status, doctor and the
journal read that one record.

Why a look at the filesystem: SQLite's own words do not say what the admin
must do (``database or disk is full``, ``disk I/O error``), and the cures
differ: a full disk is not fixed by chown, a read-only mount is not fixed by
freeing space.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from huxleyd.degraded import Degraded, Problem

_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 3, 8, 10, 13, 14
_WRITE_ERRORS = frozenset({_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL})


class WriteCause(StrEnum):
    """Why the writes fail; each has its own cure (:func:`write_fix`)."""

    FULL = "full"
    READ_ONLY = "read-only"
    PERMISSION = "permission"
    IO = "io"


_ERRNO = {
    WriteCause.FULL: errno.ENOSPC,
    WriteCause.READ_ONLY: errno.EROFS,
    WriteCause.PERMISSION: errno.EACCES,
    WriteCause.IO: errno.EIO,
}


@dataclass(frozen=True, slots=True)
class WriteFailure:
    """One write the state directory refused."""

    cause: WriteCause
    sqlite_words: str
    """SQLite's message (``database or disk is full``)."""

    @property
    def errno_text(self) -> str:
        """The operating system's words for the cause (``No space left on device``)."""
        return os.strerror(_ERRNO[self.cause])

    def what(self) -> str:
        """The degraded record's line: ``writes failing: No space left on device (…)``."""
        return (
            f"writes failing: {self.errno_text} (SQLite: {self.sqlite_words}); "
            "what is set now is not saved"
        )


def write_failure(exc: BaseException, directory: Path) -> WriteFailure | None:
    """``exc`` as a :class:`WriteFailure` of ``directory``'s filesystem, or None
    when it is no write failure (a constraint, a bug, a corrupt page)."""
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary not in _WRITE_ERRORS and primary != _SQLITE_CANTOPEN:
        return None
    words = " ".join(str(exc).split())
    return WriteFailure(_cause(primary, directory), words)


def _cause(primary: int | None, directory: Path) -> WriteCause:
    """What the filesystem says now; SQLite's code where it cannot tell."""
    try:
        fs = os.statvfs(directory)
    except OSError:
        return WriteCause.IO
    if fs.f_flag & os.ST_RDONLY:
        return WriteCause.READ_ONLY
    if primary == _SQLITE_FULL or fs.f_bavail == 0:
        return WriteCause.FULL
    if primary in (_SQLITE_READONLY, _SQLITE_PERM) or not os.access(directory, os.W_OK):
        return WriteCause.PERMISSION
    return WriteCause.IO


def write_fix(cause: WriteCause, directory: Path, *, user: str) -> str:
    """What the admin does for ``cause`` (``user``: the service user, for a chown)."""
    if cause is WriteCause.FULL:
        return (
            f"free space where {directory} is: `df -h {directory}`, "
            "`journalctl --vacuum-size=50M`, remove old files, or a bigger card; "
            "the next save that works clears this"
        )
    if cause is WriteCause.READ_ONLY:
        return (
            f"{directory} is on a read-only filesystem (freeing space or chown will not help): "
            "`dmesg | grep -i -e mmc -e ext4` says why; check or replace the card, then "
            "`sudo mount -o remount,rw /` (or reboot)"
        )
    if cause is WriteCause.PERMISSION:
        return f"sudo chown -R {user} {directory} (the daemon runs as {user})"
    return f"`dmesg` says why writes to {directory} fail (a failing card?); check or replace it"


Report = Callable[[WriteFailure], None]
Clear = Callable[[], None]


class WriteWatch:
    """The ``on_writes`` listener of a :class:`~huxleyd.storage.db.Database`:
    ``report(failure)`` at a failed write (each time: the caller updates its
    record), ``clear()`` once at the first write that works after one failed."""

    def __init__(self, report: Report, clear: Clear) -> None:
        self._report = report
        self._clear = clear
        self.failing: WriteFailure | None = None

    def __call__(self, outcome: WriteFailure | None) -> None:
        if outcome is not None:
            self.failing = outcome
            self._report(outcome)
        elif self.failing is not None:
            self.failing = None
            self._clear()


def degraded_writes(degraded: Degraded, db_path: Path, *, user: str) -> WriteWatch:
    """The database's writes in the degraded record: ``storage: writes failing: <the
    OS's words>`` with the cure for that cause, from the first write that fails to
    the next that works (which puts back the part's older problem, if it had one)."""
    older: list[Problem | None] = []

    def report(failure: WriteFailure) -> None:
        if not older:
            older.append(degraded.get("storage"))
        fix = write_fix(failure.cause, db_path.parent, user=user)
        degraded.report("storage", failure.what(), file=str(db_path), fix=fix)

    def clear() -> None:
        before = older.pop() if older else None
        degraded.clear("storage")
        if before is not None:
            degraded.put_back(before)

    return WriteWatch(report, clear)
