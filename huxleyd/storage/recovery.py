"""Open the persona database whatever state the file is in: storage never stops the start.

Layer: storage (SQLite and the file system; no asyncio).

:func:`open_or_recover` opens the database as :meth:`Database.open_sync
<huxleyd.storage.db.Database.open_sync>` does. When that fails:

- the file is broken (not a database, torn pages, a newer schema, tables
  with other columns): it is *moved aside*, never deleted, to
  ``<name>.<reason>-<UTC time>.db`` (its ``-wal``/``-shm`` beside it), and a
  fresh database takes its place;
- the state directory or the file cannot be written (an SD card remounted
  read-only, a wrong owner): the daemon runs on a database in memory.

Either way, the skills' settings rows that can still be read from the old
file (timers, bookmarks, the volume) are carried over, row by row until
SQLite stops reading, and :class:`Recovered` says what happened in one line
for status, doctor and the journal.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from huxleyd.errors import StorageError
from huxleyd.logs import get_logger
from huxleyd.storage.db import CorruptDatabaseError, Database, NewerSchemaError

log = get_logger("huxleyd.storage")

READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


@dataclass(frozen=True, slots=True)
class Recovered:
    """What :func:`open_or_recover` had to do, when the file did not simply open."""

    what: str
    """One line: what was wrong and what the daemon does instead."""
    moved_to: Path | None
    """Where the broken file went (None: it stayed, the daemon runs in memory)."""
    carried: int
    """Rows carried over from the old file."""


@dataclass(frozen=True, slots=True)
class Opened:
    db: Database
    recovered: Recovered | None


def open_or_recover(path: Path, *, wall: Callable[[], float] = time.time) -> Opened:
    """The database at ``path``, or a fresh one (on disk or in memory) and why."""
    read_only = _not_writable(path)
    if read_only is None:
        # SQLite deletes a -wal and -shm it cannot use when it closes a file it
        # refused: copies taken first keep them for the move-aside, byte for byte.
        kept = _keep_journal(path)
        try:
            opened = Opened(Database.open_sync(path), None)
        except StorageError as exc:
            cause = exc.__cause__
            if _is_read_only(cause):
                read_only = str(cause)
                _drop(kept)
            else:
                _restore(kept)
                return _move_aside_and_start_fresh(path, cause, wall)
        else:
            _drop(kept)
            return opened
    db = Database.open_memory(path)
    carried = _carry_over(path, db, immutable=True) if path.exists() else 0
    recovered = Recovered(in_memory_what(read_only) + _carried(carried), None, carried)
    log.error("storage_in_memory", file=str(path), reason=read_only, carried_rows=carried)
    return Opened(db, recovered)


def in_memory_what(read_only: str) -> str:
    """The degraded record's words for a state directory that cannot be written
    (``--check-config`` says the same, :mod:`huxleyd.config.preflight_io`)."""
    return (
        f"the state directory cannot be written ({read_only}): running on a database in "
        f"memory; nothing set from now on outlives a restart"
    )


def not_writable(path: Path) -> str | None:
    """Why the database at ``path`` cannot be written (None: it can); see below."""
    return _not_writable(path)


def _not_writable(path: Path) -> str | None:
    """Why the database at ``path`` cannot be written, or None when it can.

    Tried, not asked (``os.access`` says yes to root on a read-only mount's
    sibling and no to a file a capability would let us write)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.parent / f".{path.name}.probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        if path.exists():
            with path.open("r+b"):
                pass
    except OSError as exc:  # read-only, not ours, full: whatever it is, run in memory
        where = path.parent if ".probe-" in str(exc.filename) else exc.filename or path
        return f"{exc.strerror or exc}: {where}"
    return None


def _is_read_only(cause: BaseException | None) -> bool:
    if isinstance(cause, OSError):
        return cause.errno in READ_ONLY_ERRNOS
    code = getattr(cause, "sqlite_errorcode", None)
    return isinstance(cause, sqlite3.OperationalError) and code in (
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PERM,
    )


def _reason(cause: BaseException | None) -> str:
    """A short word for the moved-aside file's name."""
    if isinstance(cause, NewerSchemaError):
        return "newer-schema"
    if isinstance(cause, CorruptDatabaseError) and "columns" in str(cause):
        return "wrong-columns"
    return "corrupt"


JOURNALS = ("-wal", "-shm")


def _keep_journal(path: Path) -> dict[Path, Path]:
    """A copy of each journal file beside ``path`` (original → copy)."""
    kept: dict[Path, Path] = {}
    for suffix in JOURNALS:
        src = Path(f"{path}{suffix}")
        if src.is_file():
            copy = src.with_name(f".{src.name}.kept-{os.getpid()}")
            try:
                shutil.copy2(src, copy)
            except OSError:
                continue
            kept[src] = copy
    return kept


def _restore(kept: dict[Path, Path]) -> None:
    """Put each journal copy back at its name (as it was before SQLite opened it)."""
    for src, copy in kept.items():
        try:
            os.replace(copy, src)
        except OSError:
            with contextlib.suppress(OSError):
                copy.unlink()


def _drop(kept: dict[Path, Path]) -> None:
    for copy in kept.values():
        with contextlib.suppress(OSError):
            copy.unlink()


def _move_aside_and_start_fresh(
    path: Path, cause: BaseException | None, wall: Callable[[], float]
) -> Opened:
    reason = _reason(cause)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(wall()))
    aside = path.with_name(f"{path.stem}.{reason}-{stamp}{path.suffix}")
    try:
        for suffix in ("", "-wal", "-shm"):  # the WAL holds committed rows: it goes along
            src = Path(f"{path}{suffix}")
            if src.exists():
                os.replace(src, f"{aside}{suffix}")
    except OSError as exc:  # it cannot be moved (not ours): leave it, run in memory
        db = Database.open_memory(path)
        carried = _carry_over(path, db, immutable=True)
        what = (
            f"the database could not be used ({cause}) nor moved aside ({exc.strerror}): "
            "running on a database in memory"
        )
        log.error("storage_in_memory", file=str(path), reason=str(cause), carried_rows=carried)
        return Opened(db, Recovered(what + _carried(carried), None, carried))
    try:
        db = Database.open_sync(path)
        fresh = "started fresh"
    except StorageError as exc:  # the disk is full, say: at least keep running
        db = Database.open_memory(path)
        fresh = f"a fresh file failed too ({exc.__cause__}), running on a database in memory"
    carried = _carry_over_kept(aside, db)
    what = f"the database could not be used ({cause}); moved aside to {aside.name}, {fresh}"
    log.error(
        "storage_moved_aside",
        file=str(path),
        moved_to=str(aside),
        reason=reason,
        error=str(cause),
        carried_rows=carried,
    )
    return Opened(db, Recovered(what + _carried(carried), aside, carried))


def _carry_over_kept(aside: Path, db: Database) -> int:
    """Rows carried from the moved-aside file, which stays byte for byte as it was.

    Without a WAL it is read as it is (``immutable``: nothing is written
    beside it). With one, its committed rows are in the WAL, and reading them
    makes SQLite write the ``-shm``: so a scratch copy of the file and its WAL
    is read instead, and removed."""
    if not Path(f"{aside}-wal").exists():
        return _carry_over(aside, db, immutable=True)
    scratch = aside.with_name(f".{aside.name}.read-{os.getpid()}")
    copies = [Path(f"{scratch}{suffix}") for suffix in ("", "-wal")]
    try:
        for suffix, copy in zip(("", "-wal"), copies, strict=True):
            shutil.copy2(f"{aside}{suffix}", copy)
        return _carry_over(scratch, db, immutable=False)
    except OSError:
        return _carry_over(aside, db, immutable=True)
    finally:
        for copy in (*copies, Path(f"{scratch}-shm")):
            with contextlib.suppress(OSError):
                copy.unlink()


def _carried(rows: int) -> str:
    return f"; {rows} row(s) carried over" if rows else "; nothing could be carried over"


SALVAGE = (
    ("settings", "SELECT skill, key, value FROM settings ORDER BY skill {0}, key {0}", 3),
    ("daemon_state", "SELECT key, value FROM daemon_state ORDER BY key {0}", 2),
)
"""What is carried over: the skills' settings (timers, bookmarks…) and the
daemon's own state (the volume). Every value must still be text."""


def _carry_over(old: Path, db: Database, *, immutable: bool) -> int:
    """Copy the rows SQLite can still read from ``old`` into ``db``; their count."""
    rows: dict[str, set[tuple[str, ...]]] = {}
    # mode=ro needs to write the -shm of a WAL file; immutable=1 reads what is
    # in the main file only (on a read-only disk, the best there is).
    uri = f"file:{old}?{'immutable=1' if immutable else 'mode=ro'}"
    try:
        src = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return 0
    try:
        for table, query, width in SALVAGE:
            # Forwards up to the first page SQLite cannot read, then backwards
            # up to it from the other end: both sides of a torn page.
            rows[table] = _readable_rows(src, query.format("ASC"), width)
            rows[table] |= _readable_rows(src, query.format("DESC"), width)
    finally:
        src.close()

    def insert(conn: sqlite3.Connection) -> int:
        count = 0
        for table, found in rows.items():
            for row in sorted(found):
                marks = ", ".join("?" * len(row))
                count += conn.execute(
                    f"INSERT OR IGNORE INTO {table} VALUES ({marks})", row
                ).rowcount
        return count

    return db.run_sync(insert)


def _readable_rows(src: sqlite3.Connection, query: str, width: int) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    try:
        for row in src.execute(query):
            if len(row) == width and all(isinstance(v, str) for v in row):
                found.add(tuple(row))
    except sqlite3.Error as exc:
        log.warning("storage_salvage_stopped", query=query, rows=len(found), error=str(exc))
    return found
