"""A ControlHandler that records every call and answers from plain fields.

Tests set the fields (``volume``, ``playing``, ``checks``…) and read
``calls`` back. ``hang`` makes the named command wait forever (for the
request timeout); ``fail`` makes it raise the given exception.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from huxleyd.control.handler import (
    DoctorCheck,
    LevelsSample,
    SkillInfo,
    StatusReport,
    XrunCounts,
)
from huxleyd.control.protocol import PttAction


@dataclass
class FakeControlHandler:
    volume: int = 55
    playing: str | None = "Moby Dick, chapter 3"
    state: str = "idle"
    skill_list: list[SkillInfo] = field(
        default_factory=lambda: [
            SkillInfo("system", ("get_current_time", "set_volume")),
            SkillInfo("audiobooks", ("play_book", "list_books")),
        ]
    )
    checks: list[DoctorCheck] = field(
        default_factory=lambda: [
            DoctorCheck("config", True, "/etc/huxleyd/huxleyd.toml is valid"),
            DoctorCheck(
                "provider", False, "no answer from api.openai.com:443", "check the network"
            ),
        ]
    )
    samples: list[LevelsSample] = field(
        default_factory=lambda: [
            LevelsSample(-20.0, -6.0),
            LevelsSample(float("-inf"), -12.5),
            LevelsSample(-3.0, -40.0),
        ]
    )
    sample_interval_s: float = 0.0
    """Pause between level samples; 0 yields as fast as the client reads."""
    levels_limit: int | None = None
    """End the levels stream after this many samples (None: never)."""
    hang: set[str] = field(default_factory=set)
    fail: dict[str, Exception] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    levels_closed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _turns: int = 0

    def _record(self, name: str, arg: Any = None) -> None:
        with self._lock:
            self.calls.append((name, arg))

    async def _enter(self, name: str, arg: Any = None) -> None:
        self._record(name, arg)
        if name in self.fail:
            raise self.fail[name]
        if name in self.hang:
            await asyncio.Event().wait()

    def called(self, name: str) -> list[Any]:
        """The args of every call to ``name``, in order."""
        with self._lock:
            return [arg for n, arg in self.calls if n == name]

    async def status(self) -> StatusReport:
        await self._enter("status")
        return StatusReport(
            state=self.state,
            provider_state="connected",
            media=self.playing,
            volume=self.volume,
            uptime_s=3725.5,
            xruns=XrunCounts(underruns=2, overruns=1, late_periods=4, dropped_mic_frames=0),
            last_turn_timings_ms={"release_to_commit": 1.5, "commit_to_first_audio": 640.0},
            last_turn_id="t-0003",
            persona="default",
            provider_kind="sim",
            is_simulator=True,
        )

    async def get_volume(self) -> int:
        await self._enter("get_volume")
        return self.volume

    async def set_volume(self, level: int) -> int:
        await self._enter("set_volume", level)
        self.volume = level
        return level

    async def say(self, text: str) -> str:
        await self._enter("say", text)
        self._turns += 1
        return f"turn-{self._turns}"

    async def stop(self) -> bool:
        await self._enter("stop")
        was_playing = self.playing is not None
        self.playing = None
        return was_playing

    async def client_event(self, key: str, data: dict[str, Any]) -> list[str]:
        await self._enter("client_event", key)
        return ["radio"] if key == "station" else []

    async def skills(self) -> list[SkillInfo]:
        await self._enter("skills")
        return list(self.skill_list)

    async def ptt(self, action: PttAction) -> None:
        await self._enter("ptt", action)

    async def levels(self) -> AsyncIterator[LevelsSample]:
        await self._enter("levels")
        try:
            i = 0
            while self.levels_limit is None or i < self.levels_limit:
                yield self.samples[i % len(self.samples)]
                i += 1
                await asyncio.sleep(self.sample_interval_s)
        finally:
            with self._lock:
                self.levels_closed += 1

    async def doctor(self) -> list[DoctorCheck]:
        await self._enter("doctor")
        return list(self.checks)
