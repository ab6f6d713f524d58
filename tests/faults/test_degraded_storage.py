"""Storage cannot kill the start (issue 22, item 1).

Before: a database that did not open, read or migrate was "exit 1 with one
line", ten restarts, then a dead device. Now the file is moved aside (kept,
its reason and time in its name), a fresh one takes its place with the rows
SQLite can still read, and status, doctor and the journal say so. A state
directory that cannot be written runs the daemon on a database in memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from huxleyd.sim.scenario import Scenario
from huxleyd.storage.db import MIGRATIONS, Database
from huxleyd.storage.recovery import open_or_recover
from tests.e2e.harness import RATE, Rig, until
from tests.e2e.process import DaemonProcess, ctl, write_daemon_config

SCENARIO = 'name = "idle"\n'
TIMER = ("timers", "timer:t1", '{"id": "t1", "label": "tea"}')
BOOKMARK = ("audiobooks", "bookmark:b1", '{"position_s": 61.5}')


def _good_db(path: Path, rows: int = 0) -> None:
    """A database as this huxleyd writes it, with a timer, a bookmark and ``rows`` more."""

    def fill(c: sqlite3.Connection) -> None:
        c.executemany("INSERT INTO settings VALUES (?, ?, ?)", [TIMER, BOOKMARK])
        c.executemany(
            "INSERT INTO settings VALUES ('memos', ?, ?)",
            [(f"memo:{i:05d}", "x" * 200) for i in range(rows)],
        )

    async def write() -> None:
        db = await Database.open(path)
        try:
            await db.run(fill)
        finally:
            await db.close()  # the last connection's close checkpoints: all in the main file

    asyncio.run(write())


def garbage(path: Path) -> None:
    """Zero pages readable: the header is not SQLite's."""
    path.write_bytes(os.urandom(8192))


def newer_schema(path: Path) -> None:
    _good_db(path)
    with sqlite3.connect(path) as c:
        c.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS) + 5,))


def wrong_columns(path: Path) -> None:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        c.execute("INSERT INTO schema_version VALUES (?)", (len(MIGRATIONS),))
        c.execute("CREATE TABLE settings (name TEXT, blob BLOB)")
        c.execute("CREATE TABLE daemon_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def torn_page(path: Path) -> None:
    """A page in the middle overwritten (an SD card's torn write)."""
    _good_db(path, rows=400)
    page = 4096
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek((size // page // 2) * page)
        f.write(b"\xa5" * page)


CASES: dict[str, tuple[Callable[[Path], None], str, bool]] = {
    # case: (break the file, the reason in the moved file's name, timer readable)
    "zero pages readable": (garbage, "corrupt", False),
    "newer schema": (newer_schema, "newer-schema", True),
    "wrong columns": (wrong_columns, "wrong-columns", False),
    "a torn page": (torn_page, "corrupt", True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_broken_database_is_moved_aside_and_readable_rows_carried_over(
    tmp_path: Path, case: str
) -> None:
    breaks, reason, carried = CASES[case]
    path = tmp_path / "default.db"
    breaks(path)
    before = path.read_bytes()
    opened = open_or_recover(path, wall=lambda: 1_800_000_000.0)  # 2027-01-15T08:00:00Z
    try:
        aside = tmp_path / f"default.{reason}-20270115T080000Z.db"
        assert opened.recovered is not None
        assert opened.recovered.moved_to == aside
        assert aside.read_bytes() == before  # kept as it was, never deleted
        assert aside.name in opened.recovered.what
        rows = opened.db.run_sync(
            lambda c: c.execute("SELECT skill, key, value FROM settings").fetchall()
        )
        assert (TIMER in rows and BOOKMARK in rows) is carried, rows
        assert opened.db.schema_version() == len(MIGRATIONS)  # fresh, and usable
    finally:
        opened.db.close_sync()


def read_only(directory: Path) -> list[str]:
    """A command prefix under which ``directory`` cannot be written by the daemon.

    Root writes anywhere a mode says not to: as root, the directory is bind
    mounted read-only in a mount namespace of the daemon's own (EROFS, as an
    SD card remounted read-only gives); otherwise its mode is enough."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return []
    wrap = [
        "unshare",
        "-m",
        "sh",
        "-c",
        'mount --bind -o ro "$0" "$0" && exec "$@"',
        str(directory),
    ]
    probe = subprocess.run([*wrap, "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no read-only bind mount here: {probe.stderr.strip()}")
    return wrap


def test_a_corrupt_database_starts_the_daemon_and_status_doctor_journal_say_so(
    tmp_path: Path,
) -> None:
    config = write_daemon_config(tmp_path, scenario=SCENARIO)
    (tmp_path / "state").mkdir()
    torn_page(tmp_path / "state" / "default.db")
    daemon = DaemonProcess(config)
    try:
        daemon.wait_for_log("daemon_started")
        status = json.loads(ctl(daemon.socket, "status", "--json"))
        doctor = ctl(daemon.socket, "doctor")
        ctl(daemon.socket, "ptt", "tap")  # the first press says something is wrong
        daemon.wait_for_log("press_while_degraded")
    finally:
        assert daemon.terminate() == 0
    [aside] = (tmp_path / "state").glob("default.corrupt-*.db")
    [problem] = status["problems"]
    assert problem.startswith("storage: the database could not be used")
    assert aside.name in problem and str(tmp_path / "state" / "default.db") in problem
    assert "degraded parts" in doctor and aside.name in doctor
    log = daemon.output()
    assert "storage_moved_aside" in log and "part_degraded" in log
    with sqlite3.connect(tmp_path / "state" / "default.db") as c:
        assert TIMER in c.execute("SELECT skill, key, value FROM settings").fetchall()


def test_a_read_only_state_directory_runs_in_memory_and_says_so(tmp_path: Path) -> None:
    config = write_daemon_config(tmp_path, scenario=SCENARIO)
    state = tmp_path / "state"
    state.mkdir()
    _good_db(state / "default.db")
    daemon = DaemonProcess(config, wrap=read_only(state))
    try:
        daemon.wait_for_log("daemon_started")
        status = json.loads(ctl(daemon.socket, "status", "--json"))
        skills = ctl(daemon.socket, "skills")
    finally:
        assert daemon.terminate() == 0
        state.chmod(0o755)
    [problem] = status["problems"]
    assert problem.startswith("storage: the state directory cannot be written"), problem
    assert "in memory" in problem and "2 row(s) carried over" in problem
    assert "system" in skills
    assert "storage_in_memory" in daemon.output()
    assert sorted(p.name for p in state.iterdir()) == ["default.db"]  # left as it was


async def test_the_first_press_after_a_part_degraded_plays_the_cue_once() -> None:
    from huxleyd.degraded import Degraded
    from huxleyd.turns.news import DegradedPress
    from tests.fakes.turn_rig import Rig as TurnRig

    degraded = Degraded()
    async with TurnRig(degraded=degraded) as rig:
        told: list[list[str]] = []
        rig.coordinator.subscribe(
            lambda news: (
                told.append([p.part for p in news.problems])
                if isinstance(news, DegradedPress)
                else None
            )
        )
        degraded.report("storage", "moved aside, started fresh", file="default.db")
        rig.coordinator.press()
        rig.coordinator.release()
        rig.coordinator.press()  # heard once: the next press is a plain one
        assert rig.audio.earcon_names() == ["error", "listen_start", "too_short", "listen_start"]
        degraded.report("skill:radio", "setup failed: no network")  # a new problem: cue again
        rig.coordinator.release()
        rig.coordinator.press()
        assert rig.audio.earcon_names()[-2:] == ["error", "listen_start"]
        assert told == [["storage"], ["skill:radio"]]  # the text surfaces: once per problem


def test_a_problem_updated_by_a_failed_retry_is_not_cued_again() -> None:
    from huxleyd.degraded import Degraded

    degraded = Degraded(wall=lambda: 1_800_000_000.0)
    degraded.report("skill:radio", "setup failed: no network; retried with backoff")
    assert [p.part for p in degraded.take_unheard()] == ["skill:radio"]
    degraded.report("skill:radio", "setup failed: no network; retried (2 tries so far)")
    assert degraded.take_unheard() == []
    assert degraded.lines() == [
        "skill:radio: setup failed: no network; retried (2 tries so far), "
        "since 2027-01-15T08:00:00Z"
    ]
    degraded.clear("skill:radio")
    degraded.report("skill:radio", "setup failed: no network")  # back again: new, cued
    assert [p.part for p in degraded.take_unheard()] == ["skill:radio"]


def _spoken_asks(rig: Rig) -> list[str]:
    """The instructions of every ``response.create`` that asks to say what is wrong."""
    return [
        e.response.instructions
        for e in rig.sim.received
        if e.type == "response.create"
        and e.response is not None
        and "Something is wrong:" in (e.response.instructions or "")
    ]


async def _press_and_speak(rig: Rig) -> None:
    """Hold the button while the user talks, then let go."""
    done = rig.sim.record.responses_done
    button = rig.rt.parts.button
    button.press()
    rig.backend.feed_mic(bytes(RATE))  # 0.5 s of the user talking (silence will do)
    await until(lambda: rig.backend.mic_queued_frames() == 0, "mic consumed")
    button.release()
    await until(lambda: rig.sim.record.responses_done > done, "the user's turn is answered")


async def test_the_first_press_after_the_database_was_damaged_says_why_once(
    tmp_path: Path,
) -> None:
    """The cue plays at the press; the reason is said after the reply, once."""
    (tmp_path / "state").mkdir()
    garbage(tmp_path / "state" / "default.db")
    async with Rig(tmp_path, Scenario(), skills=("system",), earcons=False) as rig:
        # No earcons here (the recording stays clean): that part is degraded too, uncued.
        assert [p.part for p in rig.rt.degraded.problems()] == ["earcons", "storage"]
        await _press_and_speak(rig)
        await until(lambda: len(_spoken_asks(rig)) == 1, "the reason is asked to be said")
        await until(lambda: rig.sim.record.responses_done >= 2, "and it is said")
        await until(rig.idle, "idle")
        [ask] = _spoken_asks(rig)
        assert ask.endswith(
            "Something is wrong: my memory file was damaged, I started with a fresh one."
        )
        types = [
            "ask" if e.type == "response.create" and e.response.instructions == ask else e.type
            for e in rig.sim.received
            if e.type in ("input_audio_buffer.commit", "response.create")
        ]
        assert types == ["input_audio_buffer.commit", "response.create", "ask"], (
            "the user's own reply is asked for first, then what is wrong"
        )
        await _press_and_speak(rig)  # heard once: the next press is a plain one
        await until(rig.idle, "idle")
        assert len(_spoken_asks(rig)) == 1
        assert rig.sim.violations == []


async def test_what_is_wrong_waits_offline_at_most_its_ttl_then_the_cue_stays_the_signal() -> None:
    from huxleyd.app.runtime import PERSONA_STRINGS
    from huxleyd.config.load import PersonaString
    from huxleyd.degraded import Degraded
    from huxleyd.providers.base import ConnectionState
    from huxleyd.turns.degraded_speech import DEGRADED_SPEECH_TTL_S, DegradedSpeech
    from huxleyd.turns.state import TurnSource
    from tests.fakes.clock import settle
    from tests.fakes.turn_rig import Rig as TurnRig

    degraded = Degraded()
    async with TurnRig(degraded=degraded) as rig:
        string = PERSONA_STRINGS[PersonaString.DEGRADED]
        coordinator = rig.coordinator
        speech = DegradedSpeech(
            coordinator.spawn, coordinator.proactive.inject_turn, string=lambda: string
        )
        coordinator.subscribe(speech.on_news)  # as build subscribes it
        degraded.report("skill:radio", "setup failed: no network; retried with backoff")
        rig.coordinator.press()
        await settle()
        [queued] = rig.coordinator.proactive.queue.pending()
        assert queued.prompt.endswith(
            "Something is wrong: my radio skill did not start, I keep trying."
        )
        rig.provider.connected = False  # the link goes
        rig.coordinator.on_connection(ConnectionState.OFFLINE, 4)
        rig.coordinator.release()
        await settle()
        await rig.sleeper.advance(DEGRADED_SPEECH_TTL_S)
        assert rig.coordinator.proactive.queue.pending() == ()  # dropped, not kept forever
        rig.provider.connected = True
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        await settle()
        last = rig.coordinator.last_turn
        assert last is not None and last.source is not TurnSource.INJECT
        assert rig.coordinator.turn is None  # nothing said late
        assert rig.audio.earcon_names()[:2] == ["error", "listen_start"]  # the cue was played


def test_each_kind_of_part_has_a_spoken_reason_and_a_persona_without_words_is_cue_only() -> None:
    from huxleyd.degraded import Degraded
    from huxleyd.turns.degraded_speech import degraded_prompt

    degraded = Degraded(wall=lambda: 1_800_000_000.0)
    cases = {
        "storage": (
            "the state directory cannot be written (Read-only file system): running on a "
            "database in memory; nothing set from now on outlives a restart",
            "I cannot save anything, so what you set now is forgotten when I restart",
        ),
        "skill:timers": (
            "setup failed: boom; fix it, then restart",
            "my timers skill did not start",
        ),
        "reload": ("refused: bad key", "my new settings were refused, I kept the old ones"),
        "wake": (
            "wake word off: pymicro-wakeword is not installed",
            "I cannot listen for my wake word here, press the button to talk",
        ),
        "leds": ("no GPIO", "my leds part is not working"),
    }
    for part, (what, _) in cases.items():
        degraded.report(part, what)
    assert {p.part: p.spoken() for p in degraded.problems()} == {
        part: said for part, (_, said) in cases.items()
    }
    problems = degraded.problems()
    prompt = degraded_prompt("Algo va mal: `huxleyctl doctor` dice qué.", problems[:1])
    assert prompt is not None and prompt.endswith(
        "Algo va mal: my leds part is not working."
    )  # the model says it in the persona's language
    assert degraded_prompt("Something broke, see doctor.", problems) is None


def test_a_corrupt_database_with_a_wal_is_kept_byte_for_byte_all_three_files(
    tmp_path: Path,
) -> None:
    """docs/reliability.md promises the old file "byte for byte": with a WAL
    beside it, the WAL (which holds committed rows) and the -shm go along
    unchanged, and reading the kept file for
    rows to carry over writes none of the three."""
    import hashlib

    db = tmp_path / "default.db"
    garbage(db)
    Path(f"{db}-wal").write_bytes(os.urandom(4096 + 32))
    Path(f"{db}-shm").write_bytes(os.urandom(32768))
    before = {
        s: hashlib.sha256(Path(f"{db}{s}").read_bytes()).hexdigest() for s in ("", "-wal", "-shm")
    }
    opened = open_or_recover(db, wall=lambda: 0.0)
    assert opened.recovered is not None and opened.recovered.moved_to is not None
    aside = opened.recovered.moved_to
    after = {
        s: hashlib.sha256(Path(f"{aside}{s}").read_bytes()).hexdigest()
        for s in ("", "-wal", "-shm")
    }
    assert after == before
    opened.db.close_sync()
