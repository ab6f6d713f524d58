"""Wiring of the user volume: the control (hardware or software) and where it persists.

The level persists in the system skill's storage (``system`` /
``volume_level``), the same number its ``get_volume`` tool reads, so the
model and ``huxleyctl volume`` always agree with the speaker.
"""

from __future__ import annotations

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.volume import PersistentVolume, open_volume
from huxleyd.logs import get_logger
from huxleyd.skills.system import VOLUME_KEY
from huxleyd.storage.db import Database

log = get_logger("huxleyd.audio")


class SkillSettingLevelStore:
    """A :class:`~huxleyd.audio.volume.LevelStore` in the system skill's storage."""

    def __init__(self, db: Database) -> None:
        self._storage = db.skill_storage("system")

    async def load(self) -> int | None:
        raw = await self._storage.get_setting(VOLUME_KEY)
        return int(raw) if raw is not None and raw.isdigit() else None

    async def save(self, level: int) -> None:
        await self._storage.set_setting(VOLUME_KEY, str(level))


async def make_volume(
    settings: AudioSettings, engine: AudioEngine, db: Database
) -> PersistentVolume:
    """Open the volume control and restore the last level (``[audio] default_volume``
    until one was ever set)."""
    control = await open_volume(settings, engine)
    store = SkillSettingLevelStore(db)
    volume = PersistentVolume(control, store, default_level=settings.default_volume)
    level = await volume.restore()
    log.info("volume_restored", level=level, control=type(control).__name__)
    return volume
