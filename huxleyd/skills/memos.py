"""The voice memos skill: record a note by taking the microphone, play notes back.

"Record a note" returns an ``InputClaim`` (title "Recording a note"): once the
runtime starts it, mic frames go to the skill, which appends them to a WAV
(PCM16 24 kHz mono) under ``<persona data>/memos/``. The button ends the
claim (USER_PTT); so does the time limit (config ``max_seconds``, default 60),
counted from the audio received (bytes / 48,000) rather than the wall clock,
and enforced with ``ctx.cancel_active_claim()`` from a task — a claim returned
by a tool has no handle. A wall-clock backstop covers a mic that stops
delivering frames. When the claim ends the WAV is closed, its metadata stored
(``memo:<name>``) and a NORMAL turn confirms it to the user.

The files are the source of truth: a WAV left by a power cut mid-recording
(its header is rewritten after every frame) still lists and plays.
"""

from __future__ import annotations

import asyncio
import json
import wave
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from huxley_sdk import (
    BYTES_PER_SECOND,
    SAMPLE_RATE,
    AudioStream,
    BackgroundTaskHandle,
    ClaimEndReason,
    ContentType,
    InjectPriority,
    InputClaim,
    SkillContext,
    ToolDefinition,
    ToolResult,
)
from huxley_sdk.audio import PaletteError, read_wav_pcm16_24k_mono, silence

from .support import tool_error

META_PREFIX = "memo:"
CHUNK_BYTES = BYTES_PER_SECOND // 10
"""Playback chunks of 100 ms."""
MIN_MEMO_S = 0.5
"""Shorter recordings (a press right after the start) are discarded."""
BACKSTOP_SLACK_S = 10.0
LIST_LIMIT = 10


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Memo:
    path: Path
    created: datetime
    duration_s: float


def _open_wav(path: Path) -> wave.Wave_write:
    path.parent.mkdir(parents=True, exist_ok=True)
    wav = wave.open(str(path), "wb")  # noqa: SIM115 -- open across frames, closed at claim end
    wav.setnchannels(1)
    wav.setsampwidth(2)
    wav.setframerate(SAMPLE_RATE)
    return wav


def _scan(folder: Path) -> list[tuple[Path, float, float]]:
    """``(path, mtime, duration_s)`` of the readable WAVs in ``folder``."""
    found = []
    for path in sorted(folder.glob("*.wav")) if folder.is_dir() else []:
        duration = _wav_duration_s(path)
        if duration is not None:
            found.append((path, path.stat().st_mtime, duration))
    return found


def _wav_duration_s(path: Path) -> float | None:
    try:
        with wave.open(str(path), "rb") as wav:
            return wav.getnframes() / wav.getframerate()
    except (wave.Error, EOFError, OSError):
        return None


class _Recording:
    """One memo being recorded: the InputClaim's callbacks and their state."""

    def __init__(self, skill: MemosSkill, path: Path, limit_bytes: int) -> None:
        self._skill = skill
        self.path = path
        self._limit_bytes = limit_bytes - limit_bytes % 2
        self._wav: wave.Wave_write | None = None
        self.received_bytes = 0
        self.ended = False
        self._backstop_task: BackgroundTaskHandle | None = None
        self._ended_by_backstop = False

    async def on_mic_frame(self, frame: bytes) -> None:
        if self.ended or self.received_bytes >= self._limit_bytes:
            return
        take = frame[: self._limit_bytes - self.received_bytes]
        if self._wav is None:
            self._wav = _open_wav(self.path)
            self._backstop_task = self._skill.spawn("memo-backstop", self._backstop)
        # writeframes rewrites the header each time: the file stays valid on power loss.
        self._wav.writeframes(take)
        self.received_bytes += len(take)
        if self.received_bytes >= self._limit_bytes:
            # Not awaited here: the runtime ends the claim from its own task,
            # and may well be waiting for this callback to return.
            self._skill.spawn("memo-limit", self._end_claim)

    async def on_claim_end(self, reason: ClaimEndReason) -> None:
        if self.ended:
            return
        self.ended = True
        if self._wav is not None:
            self._wav.close()
        # The runtime may call this from inside the task that asked it to end
        # the claim; never cancel that one (it would cut this very call short).
        if self._backstop_task is not None and not self._ended_by_backstop:
            self._backstop_task.cancel()
        await self._skill.finished(self, reason)

    async def _end_claim(self) -> None:
        if not self.ended:
            await self._skill.ctx.cancel_active_claim()

    async def _backstop(self) -> None:
        await asyncio.sleep(self._limit_bytes / BYTES_PER_SECOND + self._skill.backstop_slack_s)
        self._ended_by_backstop = True
        await self._end_claim()


class MemosSkill:
    """Records voice notes through an input claim; lists, plays and deletes them."""

    name = "memos"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "directory": {"type": "string", "minLength": 1},
            "max_seconds": {"type": "number", "exclusiveMinimum": 0},
            "timezone": {"type": "string", "minLength": 1},
        },
        "additionalProperties": False,
    }
    """``[skills.memos]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(
        self,
        *,
        now: Callable[[], datetime] = _utc_now,
        gap_ms: int = 700,
        backstop_slack_s: float = BACKSTOP_SLACK_S,
    ) -> None:
        """``gap_ms`` of silence between notes played back; the backstop ends a
        recording whose frames stopped ``backstop_slack_s`` after the limit."""
        self._now = now
        self._gap_ms = gap_ms
        self.backstop_slack_s = backstop_slack_s
        self._ctx: SkillContext | None = None
        self._dir = Path()
        self._max_s = 60.0
        self._tz = ZoneInfo("UTC")

    @property
    def ctx(self) -> SkillContext:
        if self._ctx is None:
            raise RuntimeError("memos: setup() was not called")
        return self._ctx

    @property
    def tools(self) -> list[ToolDefinition]:
        empty: dict[str, Any] = {"type": "object", "properties": {}}
        return [
            ToolDefinition(
                "record_memo",
                "Record a voice note from the microphone. Tell the user to speak after "
                "you finish and to press the button when done.",
                empty,
            ),
            ToolDefinition(
                "play_memos",
                "Play the user's voice notes, newest first (count limits how many).",
                {"type": "object", "properties": {"count": {"type": "integer", "minimum": 1}}},
            ),
            ToolDefinition(
                "list_memos",
                "How many voice notes there are, when they were recorded and how long.",
                empty,
            ),
            ToolDefinition(
                "delete_memos",
                "Delete the latest voice note, or all of them. Confirm with the user first.",
                {
                    "type": "object",
                    "properties": {"which": {"type": "string", "enum": ["latest", "all"]}},
                    "required": ["which"],
                },
            ),
        ]

    async def setup(self, ctx: SkillContext) -> None:
        self._ctx = ctx
        self._dir = ctx.persona_data_dir / str(ctx.config.get("directory", "memos"))
        max_s = ctx.config.get("max_seconds", 60)
        if isinstance(max_s, bool) or not isinstance(max_s, int | float) or max_s <= 0:
            raise ValueError(f"memos: config key 'max_seconds' must be a number > 0, got {max_s!r}")
        self._max_s = float(max_s)
        self._tz = ZoneInfo(str(ctx.config.get("timezone", ctx.timezone)))

    async def teardown(self) -> None:
        self._ctx = None

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        if tool_name == "record_memo":
            return self._record()
        if tool_name == "play_memos":
            return await self._play(args)
        if tool_name == "list_memos":
            return await self._list()
        if tool_name == "delete_memos":
            return await self._delete(args)
        raise ValueError(f"memos skill has no tool {tool_name!r}")

    def spawn(self, name: str, factory: Callable[[], Any]) -> BackgroundTaskHandle:
        """A one-shot helper task for a recording (no restarts)."""
        handle: BackgroundTaskHandle = self.ctx.background_task(
            name, factory, restart_on_crash=False
        )
        return handle

    # -- recording -----------------------------------------------------------

    def _record(self) -> ToolResult:
        stamp = self._now().astimezone(UTC).strftime("%Y%m%d-%H%M%S")
        path = self._dir / f"{stamp}.wav"
        suffix = 1
        while path.exists():  # two notes in one second
            path = self._dir / f"{stamp}-{suffix}.wav"
            suffix += 1
        recording = _Recording(self, path, int(self._max_s * BYTES_PER_SECOND))
        output = {"recording": True, "max_seconds": round(self._max_s)}
        claim = InputClaim(
            on_mic_frame=recording.on_mic_frame,
            on_claim_end=recording.on_claim_end,
            title="Recording a note",
        )
        return ToolResult(output=json.dumps(output), side_effect=claim)

    async def finished(self, recording: _Recording, reason: ClaimEndReason) -> None:
        """Called by a recording when its claim ended: keep (or drop) it and tell the user."""
        ctx = self.ctx
        seconds = recording.received_bytes / BYTES_PER_SECOND
        if seconds < MIN_MEMO_S:
            await asyncio.to_thread(recording.path.unlink, missing_ok=True)
            ctx.logger.info("memo_discarded", seconds=round(seconds, 2), reason=reason.value)
            prompt = "Tell the user nothing was recorded, so no note was saved."
        else:
            meta = {
                "file": recording.path.name,
                "created_ts": self._now().timestamp() - seconds,
                "duration_s": round(seconds, 3),
                "ended_by": reason.value,
            }
            await ctx.storage.set_setting(META_PREFIX + recording.path.stem, json.dumps(meta))
            ctx.logger.info("memo_saved", file=recording.path.name, seconds=round(seconds, 1))
            limit = " (the time limit was reached)" if seconds >= self._max_s else ""
            prompt = f"Tell the user their voice note of {round(seconds)} seconds was saved{limit}."
        await ctx.inject_turn(prompt, dedup_key="memo:saved", priority=InjectPriority.NORMAL)

    # -- the notes -----------------------------------------------------------

    async def memos(self) -> list[Memo]:
        """Every readable note, newest first."""
        stored = dict(await self.ctx.storage.list_settings(META_PREFIX))
        found = []
        for path, mtime, duration in await asyncio.to_thread(_scan, self._dir):
            raw = stored.get(META_PREFIX + path.stem)
            created_ts = json.loads(raw)["created_ts"] if raw else mtime
            found.append(Memo(path, datetime.fromtimestamp(created_ts, UTC), duration))
        return sorted(found, key=lambda m: m.created, reverse=True)

    def _describe(self, memo: Memo) -> dict[str, Any]:
        local = memo.created.astimezone(self._tz)
        return {"recorded": local.strftime("%A %d %B %H:%M"), "seconds": round(memo.duration_s)}

    async def _list(self) -> ToolResult:
        memos = await self.memos()
        return ToolResult(
            output=json.dumps(
                {
                    "count": len(memos),
                    "total_seconds": round(sum(m.duration_s for m in memos)),
                    "memos": [self._describe(m) for m in memos[:LIST_LIMIT]],
                }
            )
        )

    async def _play(self, args: dict[str, Any]) -> ToolResult:
        memos = await self.memos()
        if not memos:
            return tool_error("no_memos", "there are no voice notes")
        count = args.get("count")
        chosen = memos[: int(count)] if isinstance(count, int) and count > 0 else memos
        output = {
            "playing": len(chosen),
            "of": len(memos),
            "memos": [self._describe(m) for m in chosen],
        }
        stream = AudioStream(
            factory=lambda: self._stream(chosen),
            content_type=ContentType.NONMIXABLE,
            label="Voice notes",
        )
        return ToolResult(output=json.dumps(output), side_effect=stream)

    async def _stream(self, memos: list[Memo]) -> AsyncIterator[bytes]:
        gap = silence(self._gap_ms)
        for index, memo in enumerate(memos):
            try:
                pcm = await asyncio.to_thread(read_wav_pcm16_24k_mono, memo.path)
            except (PaletteError, OSError) as exc:
                self.ctx.logger.warning("memo_unreadable", file=memo.path.name, error=str(exc))
                continue
            if index:
                yield gap
            for start in range(0, len(pcm), CHUNK_BYTES):
                yield pcm[start : start + CHUNK_BYTES]

    async def _delete(self, args: dict[str, Any]) -> ToolResult:
        which = args.get("which")
        if which not in ("latest", "all"):
            return tool_error("invalid_which", "which is 'latest' or 'all'", which=which)
        memos = await self.memos()
        if not memos:
            return tool_error("no_memos", "there are no voice notes")
        doomed = memos if which == "all" else memos[:1]
        for memo in doomed:
            await asyncio.to_thread(memo.path.unlink, missing_ok=True)
            await self.ctx.storage.delete_setting(META_PREFIX + memo.path.stem)
        remaining = len(memos) - len(doomed)
        return ToolResult(output=json.dumps({"deleted": len(doomed), "remaining": remaining}))
