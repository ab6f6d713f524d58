"""Wiring of the user volume: the control (hardware or software) and where it persists.

The device's volume is the daemon's: its level persists in the daemon's own
state (``daemon_state``, key ``volume_level``), and skills read it through
their context (``ctx.speaker_volume()``, which the composition binds to
the volume part's ``get_level``), so the model, ``huxleyctl volume`` and
the speaker always agree. Before, the level lived in the system skill's
settings; the first start after that change moves it over
(:meth:`~huxleyd.storage.db.Database.state_or_adopted`), so a user's
volume is never lost.
"""

from __future__ import annotations

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.volume import PersistentVolume, open_volume
from huxleyd.logs import get_logger
from huxleyd.storage.db import Database

log = get_logger("huxleyd.audio")

VOLUME_STATE_KEY = "volume_level"
"""The device volume's key in the daemon's state, a percent 0-100."""

FORMER_PLACE = ("system", "volume_level")
"""``(skill, key)`` of the settings row where earlier versions kept the level."""


class DaemonLevelStore:
    """A :class:`~huxleyd.audio.volume.LevelStore` in the daemon's own state."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self) -> int | None:
        skill, key = FORMER_PLACE
        raw, moved = await self._db.state_or_adopted(VOLUME_STATE_KEY, skill=skill, skill_key=key)
        if moved:
            log.info("volume_moved", level=raw, former=f"{skill}/{key}")
        return int(raw) if raw is not None and raw.isdigit() else None

    async def save(self, level: int) -> None:
        await self._db.set_state(VOLUME_STATE_KEY, str(level))


async def make_volume(
    settings: AudioSettings, engine: AudioEngine, db: Database
) -> PersistentVolume:
    """Open the volume control and restore the last level (``[audio] default_volume``
    until one was ever set)."""
    control = await open_volume(settings, engine)
    store = DaemonLevelStore(db)
    volume = PersistentVolume(control, store, default_level=settings.default_volume)
    level = await volume.restore()
    log.info("volume_restored", level=level, control=type(control).__name__)
    return volume
