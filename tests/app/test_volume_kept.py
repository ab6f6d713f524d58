"""The device volume is the daemon's: kept in its own state, read by skills through it.

Real SQLite files throughout: one written the way earlier versions wrote the
level (the system skill's settings row ``system/volume_level``), then opened
by today's code, so a user's volume survives the move.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from gpiozero.pins.mock import MockFactory, MockPWMPin

from huxleyd.app.runtime import Runtime
from huxleyd.app.volume import FORMER_PLACE, VOLUME_STATE_KEY, make_volume
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import ManualClock
from huxleyd.config.load import load_config
from huxleyd.sim.scenario import Scenario
from huxleyd.sim.server import SimServer
from huxleyd.storage.db import Database
from tests.app.test_composition import overrides
from tests.e2e.harness import SPEED, write_config

SETTINGS = AudioSettings(backend="wav", default_volume=50)


async def write_the_old_way(path: Path, level: str) -> None:
    """What the daemon's level store did before: a setting in the system skill's namespace."""
    db = await Database.open(path)
    try:
        skill, key = FORMER_PLACE
        await db.skill_storage(skill).set_setting(key, level)
    finally:
        await db.close()


def rows(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """``daemon_state`` and ``settings`` as the file holds them (read without our code)."""
    with sqlite3.connect(path) as conn:
        state = conn.execute("SELECT key, value FROM daemon_state ORDER BY key").fetchall()
        settings = conn.execute("SELECT skill, key, value FROM settings ORDER BY 1, 2").fetchall()
    return state, settings


async def start_volume(path: Path) -> int:
    """One start of the daemon's volume part on the file; returns the level it restored."""
    db = await Database.open(path)
    try:
        engine = AudioEngine(WavBackend(), settings=SETTINGS, clock=ManualClock())
        volume = await make_volume(SETTINGS, engine, db)
        return await volume.get_level()
    finally:
        await db.close()


async def test_a_level_saved_in_the_skills_namespace_moves_to_the_daemons_state(
    tmp_path: Path,
) -> None:
    path = tmp_path / "default.db"
    await write_the_old_way(path, "35")
    assert rows(path) == ([], [("system", "volume_level", "35")])

    assert await start_volume(path) == 35, "the user's level, not the default 50"
    assert rows(path) == ([(VOLUME_STATE_KEY, "35")], []), "moved, in one place only"
    # the next start reads it from the daemon's state
    assert await start_volume(path) == 35
    assert rows(path) == ([(VOLUME_STATE_KEY, "35")], [])


async def test_the_daemons_level_wins_over_a_stale_row_in_the_skills_namespace(
    tmp_path: Path,
) -> None:
    path = tmp_path / "default.db"
    await write_the_old_way(path, "35")
    db = await Database.open(path)
    try:
        await db.set_state(VOLUME_STATE_KEY, "70")
    finally:
        await db.close()
    assert await start_volume(path) == 70
    assert rows(path) == ([(VOLUME_STATE_KEY, "70")], [("system", "volume_level", "35")])


async def test_a_new_level_is_saved_in_the_daemons_state_and_nowhere_else(
    tmp_path: Path,
) -> None:
    path = tmp_path / "default.db"
    db = await Database.open(path)
    try:
        engine = AudioEngine(WavBackend(), settings=SETTINGS, clock=ManualClock())
        volume = await make_volume(SETTINGS, engine, db)
        assert await volume.set_level(62) == 62
    finally:
        await db.close()
    assert rows(path) == ([(VOLUME_STATE_KEY, "62")], [])
    assert await start_volume(path) == 62


async def test_the_system_skill_reports_the_level_the_daemons_volume_has(tmp_path: Path) -> None:
    pins = MockFactory(pin_class=MockPWMPin)
    config = load_config(write_config(tmp_path, skills=("system",)))
    await write_the_old_way(config.storage.database_path(config.daemon.persona), "35")
    async with SimServer(Scenario(turns=()), speed=SPEED, synth="tone") as sim:
        runtime = Runtime(config, overrides(pins, url=sim.url))
        try:
            await runtime.start()
            parts = runtime.parts

            async def get_volume() -> object:
                outcome = await parts.host.call("c1", "get_volume", "{}")
                return json.loads(outcome.output)

            assert await get_volume() == {"volume": 35}, "the level kept before the move"
            assert await parts.volume.set_level(21) == 21  # as huxleyctl volume 21 does
            assert await get_volume() == {"volume": 21}
            assert await parts.db.skill_storage("system").get_setting("volume_level") is None
        finally:
            await runtime.close()
    pins.close()
