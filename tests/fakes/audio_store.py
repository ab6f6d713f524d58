"""An in-memory :class:`~huxleyd.audio.volume.LevelStore` that records its saves."""

from __future__ import annotations


class MemoryLevelStore:
    def __init__(self, level: int | None = None) -> None:
        self.level = level
        self.saves: list[int] = []

    async def load(self) -> int | None:
        return self.level

    async def save(self, level: int) -> None:
        self.level = level
        self.saves.append(level)
