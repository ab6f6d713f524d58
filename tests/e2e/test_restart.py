"""End to end: what survives a stop — bookmarks and timers.

Audiobooks are generated with real ffmpeg in the test. The precise test
uses a lossless book whose samples count up, so the speaker output says
exactly which samples of the book were heard before an interrupt; the
SIGTERM test runs the real daemon as a process (WAV sound card, built-in
simulator, control socket) twice on the same state directory. Timers are
set through the model's tool, the device is "off" for a while (the stored
due time moves into the past), and the next start announces them once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from huxleyd.turns.media import LOOKAHEAD_MS
from tests.e2e.harness import (
    COUNTER_BASE,
    COUNTER_PERIOD,
    RATE,
    Rig,
    counter_runs,
    scenario_skill_installed,
    tone_windows,
    until,
)

ANNOUNCE = "ding ding"
ANNOUNCE_HZ = 550.0
"""The simulator's tone speech says "ding" at 550 Hz."""
CHUNK = RATE // 10
"""Samples per chunk the audiobooks skill yields (100 ms)."""
RAMP = RATE * 5 // 1000
LOOKAHEAD = RATE * LOOKAHEAD_MS // 1000
"""How far ahead of the speaker the runtime reads a stream."""


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def turn(*responses: ResponseSpec) -> TurnSpec:
    return TurnSpec(responses=responses)


def call(tool: str, /, **arguments: object) -> ResponseSpec:
    return ResponseSpec(tool_calls=(ToolCallSpec(name=tool, arguments=dict(arguments)),))


def speech(ms: int = 200) -> ResponseSpec:
    return ResponseSpec(say="ok", tone_hz=330.0, duration_ms=ms)


def ffmpeg(*args: str) -> None:
    command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args]
    subprocess.run(command, check=True, timeout=60)


def counting_book(folder: Path, seconds: float) -> Path:
    """A FLAC book whose sample ``j`` is the test skill's counter value ``j``."""
    folder.mkdir(parents=True, exist_ok=True)
    raw = folder / "counting.raw"
    j = np.arange(int(seconds * RATE))
    raw.write_bytes((COUNTER_BASE + j % COUNTER_PERIOD).astype("<i2").tobytes())
    book = folder / "counting.flac"
    ffmpeg("-f", "s16le", "-ar", str(RATE), "-ac", "1", "-i", str(raw), str(book))
    raw.unlink()
    return book


async def bookmark(rig: Rig, book_id: str) -> dict[str, Any] | None:
    db = rig.rt.db
    assert db is not None
    raw = await db.skill_storage("audiobooks").get_setting("bookmark:" + book_id)
    return None if raw is None else dict(json.loads(raw))


def media_playing(rig: Rig) -> bool:
    coordinator = rig.rt.coordinator
    return coordinator is not None and coordinator.media.playing


async def test_an_interrupted_book_is_bookmarked_where_the_listener_stopped_hearing_it(
    tmp_path: Path,
) -> None:
    library = tmp_path / "library"
    await asyncio.to_thread(counting_book, library, 6.0)
    scenario = Scenario(
        turns=(
            turn(call("play_audiobook", title="counting"), speech()),
            turn(call("pause_audiobook"), speech()),
        )
    )
    async with Rig(
        tmp_path,
        scenario,
        skills=("system", "audiobooks"),
        skill_config={"audiobooks": f'library = "{library}"'},
        earcons=False,
    ) as rig:
        coordinator = rig.rt.coordinator
        assert coordinator is not None
        coordinator.say("play counting")
        await until(
            lambda: sum(n for _, _, n in counter_runs(rig.speaker())) > RATE, "1 s of the book"
        )
        coordinator.say("pause the book")  # the book pauses under the question, then stops
        await until(lambda: not media_playing(rig), "the book stops")
        await until(rig.idle, "idle")
        saved = await bookmark(rig, "counting.flac")
        assert saved is not None and saved["finished"] is False
        runs = counter_runs(rig.speaker())
        assert runs[0][1] == COUNTER_BASE, "the book started at its first sample"
        _, first, length = runs[-1]
        # Heard: every sample up to the last exact one, then the 5 ms fade-out.
        heard = (first - COUNTER_BASE) + length + RAMP
        marked = round(saved["position_s"] * RATE)
        assert -RAMP <= marked - heard <= CHUNK + LOOKAHEAD, (marked, heard)


# ---------------------------------------------------------------- timers


def shift_timers_into_the_past(db_path: Path, seconds: float) -> int:
    """The device was off: every stored timer came due ``seconds`` ago."""
    now = time.time()
    with contextlib.closing(sqlite3.connect(db_path)) as db, db:
        rows = db.execute(
            "SELECT key, value FROM settings WHERE skill = 'timers' AND key LIKE 'timer:%'"
        ).fetchall()
        for key, value in rows:
            alarm = json.loads(value)
            length = alarm["due_ts"] - alarm["created_ts"]
            alarm["due_ts"] = now - seconds
            alarm["created_ts"] = now - seconds - length
            db.execute(
                "UPDATE settings SET value = ? WHERE skill = 'timers' AND key = ?",
                (json.dumps(alarm), key),
            )
    return len(rows)


def timer_requests(rig: Rig) -> list[str]:
    return [
        e.response.instructions
        for e in rig.sim.received
        if e.type == "response.create"
        and e.response is not None
        and "timer is done" in (e.response.instructions or "")
    ]


async def test_a_timer_due_while_the_device_was_off_fires_once_on_the_next_start(
    tmp_path: Path,
) -> None:
    skills = ("system", "scenario", "timers")
    setting = Scenario(turns=(turn(call("set_timer", minutes=10, name="pasta"), speech()),))
    async with Rig(tmp_path, setting, skills=skills, earcons=False) as rig:
        coordinator = rig.rt.coordinator
        assert coordinator is not None and rig.rt.db is not None
        coordinator.say("set a pasta timer for ten minutes")
        await until(lambda: len(rig.sim.record.tool_outputs) == 1, "the timer is set")
        await until(rig.idle, "idle")
        assert len(await rig.rt.db.skill_storage("timers").list_settings("timer:")) == 1
        db_path = rig.rt.config.storage.database_path(rig.rt.config.daemon.persona)
    # Off for a while: the ten minutes ran out two minutes ago.
    assert await asyncio.to_thread(shift_timers_into_the_past, db_path, 120.0) == 1

    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), skills=skills) as rig:
        await until(lambda: len(tone_windows(rig.speaker(), ANNOUNCE_HZ)) >= 3, "announced")
        await until(rig.idle, "idle")
        (prompt,) = timer_requests(rig)
        assert "'pasta' timer is done" in prompt and "late by 2 minutes" in prompt
        assert rig.rt.db is not None
        assert await rig.rt.db.skill_storage("timers").list_settings("timer:") == []

    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), skills=skills) as rig:
        mark = len(rig.speaker())
        await until(lambda: len(rig.speaker()) > mark + RATE, "a second of audio")
        assert timer_requests(rig) == [], "announced once, not on every start"
        assert [e.type for e in rig.sim.received if e.type == "response.create"] == []
