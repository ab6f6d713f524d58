"""The persona database: namespaces, migrations, and crash safety."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from huxleyd.errors import StorageError
from huxleyd.storage.db import MIGRATIONS, Database, FileSecrets


async def test_settings_are_namespaced_per_skill(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    try:
        books, radio = db.skill_storage("books"), db.skill_storage("radio")
        await books.set_setting("pos:1", "12.5")
        await books.set_setting("pos:2", "99")
        await books.set_setting("last", "2")
        await radio.set_setting("pos:1", "other")
        assert await books.get_setting("pos:1") == "12.5"
        assert await radio.get_setting("pos:1") == "other"
        assert await books.get_setting("missing", "d") == "d"
        assert await books.list_settings("pos:") == [("pos:1", "12.5"), ("pos:2", "99")]
        await books.set_setting("pos:1", "13")
        await books.delete_setting("pos:2")
        assert await books.list_settings("pos:") == [("pos:1", "13")]
        assert await radio.list_settings() == [("pos:1", "other")]
    finally:
        await db.close()


async def test_prefix_is_literal_not_a_like_pattern(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    try:
        s = db.skill_storage("s")
        await s.set_setting("a%b", "1")
        await s.set_setting("axb", "2")
        await s.set_setting("a_c", "3")
        assert await s.list_settings("a%") == [("a%b", "1")]
        assert await s.list_settings("a_") == [("a_c", "3")]
    finally:
        await db.close()


async def test_values_must_be_strings(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    try:
        with pytest.raises(TypeError, match=r"use json\.dumps"):
            await db.skill_storage("s").set_setting("k", 5)  # type: ignore[arg-type]
    finally:
        await db.close()


async def test_wal_and_schema_version(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    assert db.schema_version() == len(MIGRATIONS)
    await db.set_state("volume", "40")
    await db.close()
    conn = sqlite3.connect(tmp_path / "p.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    again = await Database.open(tmp_path / "p.db")  # re-open: no migration re-run
    assert await again.get_state("volume") == "40"
    await again.close()


async def test_every_commit_is_synced_to_disk_for_a_power_cut(tmp_path: Path) -> None:
    # A SIGKILL keeps commits either way (the kernel has them); a power cut
    # keeps only what was synced. SQLite's own answer, on the daemon's connection.
    db = await Database.open(tmp_path / "p.db")
    try:
        level = await db.run(lambda c: c.execute("PRAGMA synchronous").fetchone()[0])
        assert level == 2, f"synchronous={level}: expected 2 (FULL, the WAL synced at COMMIT)"
    finally:
        await db.close()


async def test_a_database_from_the_future_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "p.db")
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (99)")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="newer than this huxleyd knows"):
        await Database.open(tmp_path / "p.db")


async def test_migration_from_version_one_keeps_data(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "p.db")
    conn.executescript(MIGRATIONS[0])
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute("INSERT INTO settings VALUES ('books', 'pos', '7')")
    conn.commit()
    conn.close()
    db = await Database.open(tmp_path / "p.db")
    try:
        assert db.schema_version() == len(MIGRATIONS)
        assert await db.skill_storage("books").get_setting("pos") == "7"
        await db.set_state("v", "1")  # the table from migration 2 exists
    finally:
        await db.close()


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from huxleyd.storage.db import Database

    async def main() -> None:
        db = await Database.open(Path(sys.argv[1]))
        s = db.skill_storage("books")
        n = 0
        while True:
            n += 1
            await s.set_setting(f"k{n:06d}", "x" * 200)
            print(n, flush=True)  # printed only after the commit returned

    asyncio.run(main())
    """
)


def test_kill_9_mid_write_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    last = 0
    while last < 300:
        line = proc.stdout.readline()
        assert line, "writer died"
        last = int(line)
    os.kill(proc.pid, signal.SIGKILL)  # while it is writing the next one
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    async def read_back() -> list[tuple[str, str]]:
        db = await Database.open(path)
        try:
            return await db.skill_storage("books").list_settings("k")
        finally:
            await db.close()

    rows = asyncio.run(read_back())
    keys = [k for k, _ in rows]
    assert len(keys) >= last, f"committed {last}, found {len(keys)}"
    assert keys[:last] == [f"k{n:06d}" for n in range(1, last + 1)]


async def test_secrets_are_private_files(tmp_path: Path) -> None:
    secrets = FileSecrets(tmp_path / "secrets", "telegram")
    assert await secrets.get("token") is None
    await secrets.set("token", "s3cr3t")
    await secrets.set("chat", "42")
    assert await secrets.keys() == ["chat", "token"]
    path = tmp_path / "secrets" / "telegram.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    await secrets.delete("chat")
    assert await FileSecrets(tmp_path / "secrets", "telegram").keys() == ["token"]
    assert await FileSecrets(tmp_path / "secrets", "other").get("token") is None


async def test_a_corrupt_secrets_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text("{oops")
    with pytest.raises(StorageError, match=r"s\.json: unreadable secrets file"):
        await FileSecrets(tmp_path, "s").get("x")
