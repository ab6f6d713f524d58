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
from huxleyd.control.watch import WatchEvent


@dataclass
class FakeControlHandler:
    volume: int = 55
    muted: bool = False
    playing: str | None = "Moby Dick, chapter 3"
    state: str = "idle"
    provider_state: str = "connected"
    is_simulator: bool = True
    provider_attempt: int = 0
    provider_detail: str = ""
    provider_retry_in_s: float | None = None
    skill_list: list[SkillInfo] = field(
        default_factory=lambda: [
            SkillInfo("system", ("get_current_time", "set_volume"), "huxleyd", "0.1.0"),
            SkillInfo(
                "audiobooks",
                ("play_book", "list_books"),
                "huxley-skill-audiobooks",
                "0.1.0",
                state="failed",
                reason="setup failed: no library folder",
            ),
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
            LevelsSample(-3.0, -40.0, silences=2),
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
    events: list[WatchEvent] = field(default_factory=list)
    """What ``watch`` streams (then it stays quiet)."""
    watch_closed: int = 0
    answer: str | None = "It is noon."
    """What the assistant "says" after each ``say`` (None: nothing, no turn end)."""
    _watchers: list[asyncio.Queue[WatchEvent]] = field(default_factory=list)
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
            provider_state=self.provider_state,
            media=self.playing,
            volume=self.volume,
            uptime_s=3725.5,
            xruns=XrunCounts(
                underruns=2, overruns=1, late_periods=4, dropped_mic_frames=0, card_underruns=2
            ),
            last_turn_timings_ms={"release_to_commit": 1.5, "commit_to_first_audio": 640.0},
            last_turn_id="t-0003",
            persona="default",
            provider_kind="sim" if self.is_simulator else "openai",
            is_simulator=self.is_simulator,
            provider_attempt=self.provider_attempt,
            provider_detail=self.provider_detail,
            provider_retry_in_s=self.provider_retry_in_s,
        )

    async def get_volume(self) -> int:
        await self._enter("get_volume")
        return self.volume

    async def set_volume(self, level: int) -> int:
        await self._enter("set_volume", level)
        self.volume = level
        return level

    async def get_muted(self) -> bool:
        await self._enter("get_muted")
        return self.muted

    async def set_muted(self, muted: bool) -> bool:
        await self._enter("set_muted", muted)
        self.muted = muted
        return self.muted

    async def say(self, text: str) -> str:
        await self._enter("say", text)
        self._turns += 1
        turn = f"turn-{self._turns}"
        if self.answer is not None:
            at = "2026-01-01T12:00:01.000+00:00"
            self._publish(WatchEvent("said", at, turn, {"text": self.answer}))
            outcome = {"outcome": "answered", "tools": None, "source": "text"}
            self._publish(WatchEvent("turn", at, turn, outcome))
        return turn

    def _publish(self, event: WatchEvent) -> None:
        for queue in self._watchers:
            queue.put_nowait(event)

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

    async def watch(self) -> AsyncIterator[WatchEvent]:
        """The ``events``, then quiet until the client leaves."""
        await self._enter("watch")
        try:
            yield WatchEvent("watching", "2026-01-01T12:00:00.000+00:00", None, {"clients": 1})
            for event in self.events:
                yield event
            queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
            self._watchers.append(queue)
            while True:
                yield await queue.get()
        finally:
            with self._lock:
                self.watch_closed += 1

    async def doctor(self) -> list[DoctorCheck]:
        await self._enter("doctor")
        return list(self.checks)
