"""The persona database: one SQLite file per persona, and per-skill secrets.

SQLite in WAL mode with ``synchronous=FULL``: a committed transaction
survives the process being killed and a power cut (every commit syncs the
write-ahead log). What that costs: the busiest writer is a playing
audiobook's bookmark, two commits a second, each one page of the log plus
its frame header (about 4 KiB) and one fsync, on the database thread, never
on the loop nor in the sound's path (docs/reliability.md, "Power cut").
``NORMAL`` skips the fsync and so loses the last ~30 s of commits when the
power goes (the kernel writes dirty pages back after 30 s). A
``schema_version`` table drives forward-only migrations (``MIGRATIONS``).

One worker thread owns the connection, so the event loop never blocks on
disk; every call is one short transaction. ``bench`` measures the cost.

Layout: ``settings(skill, key, value)`` — the skills' key-value stores;
later migrations add what other layers need (bookmarks, turns).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from huxleyd.errors import StorageError
from huxleyd.storage.writes import WriteFailure, write_failure

T = TypeVar("T")

MIGRATIONS: tuple[str, ...] = (
    # 1: the skills' settings
    """
    CREATE TABLE settings (
        skill TEXT NOT NULL,
        key   TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (skill, key)
    ) WITHOUT ROWID;
    """,
    # 2: daemon state that outlives a restart (volume, last session)
    """
    CREATE TABLE daemon_state (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
)
"""Forward migrations; index + 1 is the schema version they produce. Append only."""


class Database:
    """The persona database. Create with :meth:`open`; :meth:`close` when done."""

    def __init__(self, path: Path, conn: sqlite3.Connection, executor: ThreadPoolExecutor) -> None:
        self.path = path
        self._conn = conn
        self._executor = executor
        self._closed = False
        self.on_writes: Callable[[WriteFailure | None], None] | None = None
        """Told, on the loop, each :meth:`run` that failed to write (a full disk, a
        read-only mount: :mod:`huxleyd.storage.writes`) and each that committed a
        change (``None``): the runtime's degraded record listens."""

    @classmethod
    def open_sync(cls, path: Path) -> Database:
        """Open (creating and migrating) the database at ``path``.

        Raises :class:`StorageError` whose ``__cause__`` is the ``sqlite3``
        error (:mod:`huxleyd.storage.recovery` tells a read-only disk from a
        broken file by it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls._open(path, str(path))

    @classmethod
    def open_memory(cls, stands_for: Path) -> Database:
        """A fresh database in memory, for a state directory that cannot be written.

        ``stands_for`` is the file it replaces (``path``, for the messages)."""
        return cls._open(stands_for, ":memory:")

    @classmethod
    def _open(cls, path: Path, target: str) -> Database:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="huxleyd-db")
        try:
            conn = executor.submit(_connect_and_migrate, target).result()
        except sqlite3.Error as exc:
            executor.shutdown(wait=False)
            raise StorageError(f"{path}: cannot open the database: {exc}") from exc
        return cls(path, conn, executor)

    @classmethod
    async def open(cls, path: Path) -> Database:
        return await asyncio.to_thread(cls.open_sync, path)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the database thread inside one transaction."""
        if self._closed:
            raise StorageError(f"{self.path}: database is closed")

        def in_transaction() -> tuple[T, bool]:
            before = self._conn.total_changes
            return _transaction(self._conn, fn), self._conn.total_changes != before

        loop = asyncio.get_running_loop()
        try:
            result, wrote = await loop.run_in_executor(self._executor, in_transaction)
        except sqlite3.Error as exc:
            failure = write_failure(exc, self.path.parent)
            if failure is not None and self.on_writes is not None:
                self.on_writes(failure)
            raise StorageError(f"{self.path}: {exc}") from exc
        if wrote and self.on_writes is not None:
            self.on_writes(None)
        return result

    def run_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`run` for the start, before the loop runs anything else."""
        return self._executor.submit(_transaction, self._conn, fn).result()

    def schema_version(self) -> int:
        return self._executor.submit(_version, self._conn).result()

    def close_sync(self) -> None:
        """:meth:`close` off the loop (tools and tests). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._executor.submit(self._conn.close).result()
        self._executor.shutdown(wait=True)

    async def close(self) -> None:
        """Checkpoint and close. Idempotent."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._conn.close)
        self._executor.shutdown(wait=True)

    # -- daemon state ---------------------------------------------------------

    async def get_state(self, key: str) -> str | None:
        def q(c: sqlite3.Connection) -> str | None:
            row = c.execute("SELECT value FROM daemon_state WHERE key = ?", (key,)).fetchone()
            return None if row is None else str(row[0])

        return await self.run(q)

    async def set_state(self, key: str, value: str) -> None:
        await self.run(
            lambda c: c.execute(
                "INSERT INTO daemon_state(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        )

    async def state_or_adopted(
        self, key: str, *, skill: str, skill_key: str
    ) -> tuple[str | None, bool]:
        """The daemon state ``key``; when it has none, the skill setting
        ``skill_key`` of ``skill`` moved into it (copied and deleted in one
        transaction, so the value is always in one place or the other).

        Returns ``(value, moved)``: for state the daemon took over from a skill's
        namespace, read the old way on the first start after the change."""

        def q(c: sqlite3.Connection) -> tuple[str | None, bool]:
            row = c.execute("SELECT value FROM daemon_state WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return str(row[0]), False
            where = (skill, skill_key)
            old = c.execute(
                "SELECT value FROM settings WHERE skill = ? AND key = ?", where
            ).fetchone()
            if old is None:
                return None, False
            c.execute("INSERT INTO daemon_state(key, value) VALUES(?, ?)", (key, old[0]))
            c.execute("DELETE FROM settings WHERE skill = ? AND key = ?", where)
            return str(old[0]), True

        return await self.run(q)

    def skill_storage(self, skill: str) -> SkillSettings:
        return SkillSettings(self, skill)


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def _transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    # Autocommit connection + explicit BEGIN: DDL is transactional too, so a
    # migration is all-or-nothing even if the process dies half-way.
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        # SQLite already rolled back on some errors (SQLITE_FULL: the disk is
        # full); a second ROLLBACK would raise and hide the real error.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def _connect_and_migrate(target: str) -> sqlite3.Connection:
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        # A torn or overwritten page shows here, at the start, not in the
        # middle of a turn (the database is small: this is milliseconds).
        problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise CorruptDatabaseError(f"quick_check: {'; '.join(problems[:3])}")
        _transaction(conn, _migrate_and_check)
        # WAL only now: a file refused above is left byte for byte as it was.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # durable at COMMIT: see the module docstring
    except BaseException:
        conn.close()
        raise
    return conn


class CorruptDatabaseError(sqlite3.DatabaseError):
    """SQLite opened the file, but its pages or tables are not what they must be."""


class NewerSchemaError(sqlite3.DatabaseError):
    """The file was written by a newer huxleyd (its schema version is higher)."""


@functools.cache
def expected_columns() -> dict[str, list[tuple[str, str]]]:
    """Each table's ``(column, type)`` as :data:`MIGRATIONS` make them (run in memory)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _transaction(conn, _migrate)
        return _columns(conn)
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection) -> dict[str, list[tuple[str, str]]]:
    tables = [
        str(r[0])
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    return {
        t: [(str(c[1]), str(c[2]).upper()) for c in conn.execute(f'PRAGMA table_info("{t}")')]
        for t in tables
    }


def _migrate_and_check(conn: sqlite3.Connection) -> None:
    _migrate(conn)
    _check_columns(conn)  # in the transaction: a refused file is rolled back


def _check_columns(conn: sqlite3.Connection) -> None:
    """The tables are those the migrations make (a file edited by hand, or by
    another program, fails here rather than at the first bookmark)."""
    found = _columns(conn)
    for table, columns in expected_columns().items():
        if found.get(table) != columns:
            raise CorruptDatabaseError(
                f"table {table!r} has columns {found.get(table)}, expected {columns}"
            )


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    current = _version(conn)
    if current > len(MIGRATIONS):
        raise NewerSchemaError(
            f"schema version {current} is newer than this huxleyd knows ({len(MIGRATIONS)})"
        )
    for script in MIGRATIONS[current:]:
        for statement in filter(str.strip, script.split(";")):
            conn.execute(statement)
    if current == 0:
        conn.execute("INSERT INTO schema_version(version) VALUES (?)", (len(MIGRATIONS),))
    else:
        conn.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))


class SkillSettings:
    """One skill's namespace of the settings table (``huxley_sdk.SkillStorage``)."""

    def __init__(self, db: Database, skill: str) -> None:
        self._db = db
        self._skill = skill

    async def get_setting(self, key: str, default: str | None = None) -> str | None:
        def q(c: sqlite3.Connection) -> str | None:
            row = c.execute(
                "SELECT value FROM settings WHERE skill = ? AND key = ?", (self._skill, key)
            ).fetchone()
            return default if row is None else str(row[0])

        return await self._db.run(q)

    async def set_setting(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(
                f"skill {self._skill!r}: storage values are strings; "
                f"got {type(value).__name__} for key {key!r} (use json.dumps)"
            )
        await self._db.run(
            lambda c: c.execute(
                "INSERT INTO settings(skill, key, value) VALUES(?, ?, ?) "
                "ON CONFLICT(skill, key) DO UPDATE SET value = excluded.value",
                (self._skill, key, value),
            )
        )

    async def list_settings(self, prefix: str = "") -> list[tuple[str, str]]:
        def q(c: sqlite3.Connection) -> list[tuple[str, str]]:
            # substr comparison, not LIKE: a prefix may contain % or _.
            rows = c.execute(
                "SELECT key, value FROM settings WHERE skill = ? AND substr(key, 1, ?) = ? "
                "ORDER BY key",
                (self._skill, len(prefix), prefix),
            ).fetchall()
            return [(str(k), str(v)) for k, v in rows]

        return await self._db.run(q)

    async def delete_setting(self, key: str) -> None:
        await self._db.run(
            lambda c: c.execute(
                "DELETE FROM settings WHERE skill = ? AND key = ?", (self._skill, key)
            )
        )


class FileSecrets:
    """A skill's secrets in ``<dir>/<skill>.json``, mode 0600 (``huxley_sdk.SkillSecrets``).

    Written atomically (temp file + rename) so a crash never leaves half a file.
    """

    def __init__(self, directory: Path, skill: str) -> None:
        self._path = directory / f"{skill}.json"
        self._lock = asyncio.Lock()

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StorageError(f"{self._path}: unreadable secrets file: {exc}") from exc
        if not isinstance(data, dict):
            raise StorageError(f"{self._path}: expected a JSON object of strings")
        return {str(k): str(v) for k, v in data.items()}

    def _write(self, data: dict[str, str]) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self._path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path)

    async def get(self, key: str) -> str | None:
        return (await asyncio.to_thread(self._read)).get(key)

    async def set(self, key: str, value: str) -> None:
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            data[key] = value
            await asyncio.to_thread(self._write, data)

    async def delete(self, key: str) -> None:
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            if data.pop(key, None) is not None:
                await asyncio.to_thread(self._write, data)

    async def keys(self) -> list[str]:
        return sorted(await asyncio.to_thread(self._read))
