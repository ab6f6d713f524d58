"""The timers skill: kitchen timers and reminders at a local time.

Every timer or reminder is one JSON value in the skill's storage under
``timer:<id>``, so it survives a reboot. A reminder (a time of day) is due
at a wall-clock instant (UTC epoch seconds). A timer (a duration) is due at
a reading of ``CLOCK_BOOTTIME`` in the boot it was set in, so a wall-clock
step (NTP after boot on a Pi with no RTC) neither fires it early nor holds
it back; after a reboot that reading means nothing, and the timer falls back
to its wall-clock due time once the wall clock is plausible, then is
re-anchored to the new boot (:mod:`huxleyd.skills.skillclock`). Nothing that
depends on the wall clock fires before it is plausible. ``setup`` loads them and starts one supervised background task that
fires whatever is due through ``ctx.inject_turn_and_wait`` (BLOCK_BEHIND_COMMS:
a book pauses for it, a live call does not). One that came due while the
device was off fires once on start and says how late it is. A fired entry is
deleted only once its announcement was *heard*: while the provider is down
it waits in the inject queue, and a restart before then fires it again on
start instead of losing it; one that expired unheard is announced again
(late) on the next pass. The dedup key ``timer:<id>`` keeps a repeat from doubling.

The loop re-reads the clocks at least every ``poll_s`` seconds instead of
sleeping until the due time: a reminder follows a wall clock that can jump.
Whatever is due in one pass is announced in one turn (a clock that jumps
over three reminders, or the first plausible clock after boot, gives one
announcement, not a burst). Tests inject the clocks (``clock=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import secrets
from dataclasses import asdict, dataclass, replace
from datetime import date, datetime
from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from huxley_sdk import (
    BackgroundTaskHandle,
    InjectPriority,
    SkillContext,
    ToolDefinition,
    ToolResult,
)

from .clocktext import next_occurrence, parse_clock_time, spoken_duration
from .media import best_match
from .skillclock import SkillClock, SystemClock, system_clock_for
from .support import require_ctx, tool_error

KEY_PREFIX = "timer:"
"""Storage key prefix; the rest of the key is the timer's id."""
LATE_GRACE_S = 30.0
"""Fired later than this after its due time, a timer says how late it is."""
MAX_TIMER_S = 24 * 3600
"""Longer than a day is a reminder, not a timer."""


class Kind(enum.Enum):
    TIMER = "timer"
    REMINDER = "reminder"


@dataclass(frozen=True, slots=True)
class Alarm:
    """One timer or reminder. Times are UTC epoch seconds."""

    id: str
    kind: Kind
    due_ts: float
    created_ts: float
    name: str | None = None
    duration_s: float | None = None
    """Timers: the duration asked for."""
    text: str | None = None
    """Reminders: what to remind the user of."""
    boot_id: str | None = None
    """Timers: the boot ``due_steady_s`` was read in (None: stored by an older
    version, which knew only the wall clock)."""
    due_steady_s: float | None = None
    """Timers: the due time on CLOCK_BOOTTIME of ``boot_id``."""

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "kind": self.kind.value})

    @classmethod
    def from_json(cls, value: str) -> Alarm:
        """Parse a stored value; raises ValueError/KeyError/TypeError when corrupt."""
        data = json.loads(value)
        return cls(
            id=str(data["id"]),
            kind=Kind(data["kind"]),
            due_ts=float(data["due_ts"]),
            created_ts=float(data["created_ts"]),
            name=data.get("name"),
            duration_s=None if data.get("duration_s") is None else float(data["duration_s"]),
            text=data.get("text"),
            boot_id=None if data.get("boot_id") is None else str(data["boot_id"]),
            due_steady_s=None if data.get("due_steady_s") is None else float(data["due_steady_s"]),
        )

    @property
    def label(self) -> str:
        """What the user would call it: its name, its text, or its duration."""
        if self.name:
            return self.name
        if self.kind is Kind.REMINDER and self.text:
            return self.text
        return spoken_duration(self.duration_s or 0) + " timer"


@dataclass(frozen=True, slots=True)
class Reading:
    """The clocks, read once for one decision."""

    wall_ts: float
    steady_s: float
    boot_id: str
    plausible: bool

    def due_in_s(self, alarm: Alarm) -> float | None:
        """Seconds until ``alarm`` is due (<= 0: due); None until the wall clock is plausible."""
        if alarm.due_steady_s is not None and alarm.boot_id == self.boot_id:
            return alarm.due_steady_s - self.steady_s
        if not self.plausible:
            return None
        return alarm.due_ts - self.wall_ts

    def anchored(self, alarm: Alarm) -> Alarm | None:
        """A timer of another boot re-anchored to this one (None: nothing to do yet)."""
        if alarm.kind is not Kind.TIMER or alarm.boot_id == self.boot_id or not self.plausible:
            return None
        left = alarm.due_ts - self.wall_ts
        return replace(alarm, boot_id=self.boot_id, due_steady_s=self.steady_s + left)


class TimersSkill:
    """Timers (a duration) and reminders (a local time), persisted and re-armed on start."""

    name = "timers"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "minLength": 1},
            "time_sync_flag": {"type": "string", "minLength": 1},
        },
        "additionalProperties": False,
    }
    """``[skills.timers]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(self, *, clock: SkillClock | None = None, poll_s: float = 1.0) -> None:
        """``clock``: the clocks to read (default: the machine's, see
        :mod:`~huxleyd.skills.skillclock`); ``poll_s`` bounds how stale a reading may get."""
        self._given_clock = clock
        self._clock: SkillClock = clock or SystemClock()
        self._poll_s = poll_s
        self._waiting_for_clock = False
        self._ctx: SkillContext | None = None
        self._tz = ZoneInfo("UTC")
        self._alarms: dict[str, Alarm] = {}
        self._wake = asyncio.Event()
        self._fire_lock = asyncio.Lock()
        self._task: BackgroundTaskHandle | None = None

    # longer than 50 lines: one table of the skill's tool definitions
    @property
    def tools(self) -> list[ToolDefinition]:
        number = {"type": "number", "minimum": 0}
        return [
            ToolDefinition(
                name="set_timer",
                description=(
                    "Start a countdown timer. Give the duration in any mix of hours, "
                    "minutes and seconds; name it when the user does (e.g. 'pasta')."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "hours": number,
                        "minutes": number,
                        "seconds": number,
                        "name": {"type": "string"},
                    },
                    "additionalProperties": False,
                },
            ),
            ToolDefinition(
                name="set_reminder",
                description=(
                    "Remind the user of something at a local clock time (24-hour HH:MM). "
                    "Today, or tomorrow if that time has passed, unless date is given."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "time": {"type": "string", "description": "HH:MM, 24-hour"},
                        "text": {"type": "string", "description": "what to remind of"},
                        "date": {"type": "string", "description": "YYYY-MM-DD, optional"},
                    },
                    "required": ["time", "text"],
                    "additionalProperties": False,
                },
            ),
            ToolDefinition(
                name="list_timers",
                description="List running timers and pending reminders with the time left.",
                parameters={"type": "object", "properties": {}},
            ),
            ToolDefinition(
                name="cancel_timer",
                description=(
                    "Cancel a timer or reminder by name; without a name, the only one or "
                    "the most recently set. all=true cancels every one."
                ),
                parameters={
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "all": {"type": "boolean"}},
                    "additionalProperties": False,
                },
            ),
        ]

    async def setup(self, ctx: SkillContext) -> None:
        """Load persisted timers and start the firing loop (which fires overdue ones first)."""
        self._ctx = ctx
        if self._given_clock is None:
            self._clock = system_clock_for(ctx.config)
        zone = str(ctx.config.get("timezone", ctx.timezone))
        try:
            self._tz = ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"timers: config key 'timezone': unknown time zone {zone!r} "
                "(expected e.g. 'Europe/Madrid')"
            ) from exc
        self._alarms = {}
        for key, value in await ctx.storage.list_settings(KEY_PREFIX):
            try:
                alarm = Alarm.from_json(value)
            except (ValueError, KeyError, TypeError) as exc:
                ctx.logger.warning("timer_corrupt", key=key, error=str(exc))
                await ctx.storage.delete_setting(key)
                continue
            self._alarms[alarm.id] = alarm
        ctx.logger.info("timers_loaded", count=len(self._alarms))
        self._task = ctx.background_task("timers", self._run)

    async def teardown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        if tool_name == "set_timer":
            return await self._set_timer(args)
        if tool_name == "set_reminder":
            return await self._set_reminder(args)
        if tool_name == "list_timers":
            return self._list()
        if tool_name == "cancel_timer":
            return await self._cancel(args)
        raise ValueError(f"timers skill has no tool {tool_name!r}")

    # -- firing --------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            await self.fire_due()
            delay = self._poll_s
            reading = self._read()
            waits = [reading.due_in_s(a) for a in self._alarms.values()]
            ahead = [w for w in waits if w is not None and w > 0]
            # One still due was not heard: try again after a poll, not at once.
            delay = min([delay, *ahead])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def next_alert_in_s(self) -> float | None:
        """Seconds until the soonest timer or reminder is due (<= 0: due, not yet
        heard); None when there is none, or only reminders waiting for the wall
        clock. The daemon will not reboot for updates across one (control/reboot.py)."""
        reading = self._read()
        dues = [reading.due_in_s(alarm) for alarm in self._alarms.values()]
        return min((d for d in dues if d is not None), default=None)

    async def fire_due(self) -> int:
        """Announce everything due by now in one turn; delete it once heard.

        Returns how many were heard. One announcement for all that is due
        (several at once are one turn, not a burst); not heard (expired,
        failed, the daemon stopping), they stay stored and come round again.
        Nothing that needs the wall clock fires before it is plausible. The
        firing loop calls this; it is safe to call concurrently (tests do).
        """
        ctx = require_ctx(self._ctx, self.name)
        async with self._fire_lock:
            reading = self._read()
            await self._anchor_to_this_boot(reading)
            due: list[tuple[Alarm, float]] = []
            waiting = 0
            for alarm in sorted(self._alarms.values(), key=_due_key):
                left = reading.due_in_s(alarm)
                if left is None:
                    waiting += 1
                elif left <= 0:
                    due.append((alarm, -left))
            self._note_clock_wait(ctx, waiting)
            if not due:
                return 0
            heard = await self._announce(due)
        return len(due) if heard else 0

    async def _anchor_to_this_boot(self, reading: Reading) -> None:
        """Timers of another boot: their wall due time, once that clock is plausible,
        becomes a steady due time of this boot (later steps do not move them)."""
        ctx = require_ctx(self._ctx, self.name)
        for alarm in list(self._alarms.values()):
            anchored = reading.anchored(alarm)
            if anchored is None:
                continue
            await ctx.storage.set_setting(KEY_PREFIX + alarm.id, anchored.to_json())
            self._alarms[alarm.id] = anchored
            ctx.logger.info(
                "timer_reanchored",
                id=alarm.id,
                from_boot=alarm.boot_id or "unknown",
                left_s=round(alarm.due_ts - reading.wall_ts, 1),
            )

    def _note_clock_wait(self, ctx: SkillContext, waiting: int) -> None:
        """Say once that alarms wait for the wall clock, and once when they stop waiting."""
        if waiting and not self._waiting_for_clock:
            ctx.logger.warning(
                "timers_wait_for_clock",
                waiting=waiting,
                why="the wall clock is not synchronised yet (no RTC, no time sync since boot)",
            )
        elif not waiting and self._waiting_for_clock:
            ctx.logger.info("timers_clock_plausible")
        self._waiting_for_clock = bool(waiting)

    async def _announce(self, due: list[tuple[Alarm, float]]) -> bool:
        ctx = require_ctx(self._ctx, self.name)
        key = KEY_PREFIX + "+".join(alarm.id for alarm, _ in due)
        prompt = self._group_prompt(due)
        await ctx.inject_turn(prompt, dedup_key=key, priority=InjectPriority.BLOCK_BEHIND_COMMS)
        # huxleyd answers whether it was heard (False: expired, failed, shut
        # down first); a runtime that answers nothing is taken at its word.
        outcome: object = await ctx.inject_turn_and_wait(prompt, dedup_key=key)  # type: ignore[func-returns-value]
        if outcome is False:
            for alarm, _ in due:
                ctx.logger.warning("timer_not_heard", id=alarm.id, kind=alarm.kind.value)
            return False
        # Only now: a restart before this line repeats the announcement on the
        # next start instead of losing it.
        for alarm, late_s in due:
            await ctx.storage.delete_setting(KEY_PREFIX + alarm.id)
            self._alarms.pop(alarm.id, None)
            ctx.logger.info(
                "timer_fired", id=alarm.id, kind=alarm.kind.value, late_s=round(late_s, 1)
            )
        return True

    def _group_prompt(self, due: list[tuple[Alarm, float]]) -> str:
        if len(due) == 1:
            return self._prompt(*due[0])
        items = " ".join(f"({n}) {self._prompt(a, late)}" for n, (a, late) in enumerate(due, 1))
        return (
            f"{len(due)} timers and reminders came due together; tell the user about all "
            f"of them in one short answer, in this order. {items}"
        )

    def _prompt(self, alarm: Alarm, late_s: float) -> str:
        if alarm.kind is Kind.REMINDER:
            at = self._local(alarm.due_ts).strftime("%H:%M")
            text = f"Reminder the user asked for at {at}: {alarm.text}. Remind them now, briefly."
        else:
            what = f"the '{alarm.name}' timer" if alarm.name else f"the {alarm.label}"
            text = f"Timer finished: {what} is done. Tell the user now, in one short sentence."
        if late_s > LATE_GRACE_S:
            text += (
                f" It came due while the speaker was off or busy: say it is late by "
                f"{spoken_duration(late_s)}."
            )
        return text

    # -- tools ---------------------------------------------------------------

    async def _set_timer(self, args: dict[str, Any]) -> ToolResult:
        try:
            parts = [float(args.get(unit) or 0) * factor for unit, factor in _UNITS.items()]
        except (TypeError, ValueError):
            parts = [-1.0]
        if any(part < 0 for part in parts):
            return tool_error(
                "invalid_duration",
                "hours, minutes and seconds must be non-negative numbers",
                args={k: args.get(k) for k in _UNITS},
            )
        total = sum(parts)
        if not 0 < total <= MAX_TIMER_S:
            return tool_error(
                "invalid_duration",
                "a timer lasts more than 0 seconds and at most 24 hours; use a reminder beyond",
                seconds=total,
            )
        name = str(args.get("name") or "").strip() or None
        at = self._read()
        alarm = Alarm(
            _new_id(),
            Kind.TIMER,
            at.wall_ts + total,
            at.wall_ts,
            name=name,
            duration_s=total,
            boot_id=at.boot_id,
            due_steady_s=at.steady_s + total,
        )
        await self._add(alarm)
        return ToolResult(
            output=json.dumps(
                {
                    "set": "timer",
                    "name": name,
                    "duration": spoken_duration(total),
                    "ends_at": self._local(alarm.due_ts).strftime("%H:%M"),
                }
            )
        )

    async def _set_reminder(self, args: dict[str, Any]) -> ToolResult:
        text = str(args.get("text") or "").strip()
        if not text:
            return tool_error("missing_text", "say what to remind the user of")
        try:
            at = parse_clock_time(str(args.get("time") or ""))
        except ValueError as exc:
            return tool_error("invalid_time", str(exc))
        if not self._clock.wall_plausible():
            return tool_error(
                "clock_not_set",
                "the clock is not set yet (no time sync since the speaker started); "
                "a reminder at a time of day cannot be set until it is: try again shortly",
            )
        on: date | None = None
        if args.get("date"):
            try:
                on = date.fromisoformat(str(args["date"]))
            except ValueError:
                return tool_error("invalid_date", f"expected YYYY-MM-DD, got {args['date']!r}")
        now = self._clock.utc_now()
        due = next_occurrence(at, now, self._tz, on)
        if due <= now:
            return tool_error("time_passed", f"{on} {at:%H:%M} has already passed")
        alarm = Alarm(_new_id(), Kind.REMINDER, due.timestamp(), now.timestamp(), text=text)
        await self._add(alarm)
        local_due, local_now = due.astimezone(self._tz), now.astimezone(self._tz)
        days = (local_due.date() - local_now.date()).days
        day = {0: "today", 1: "tomorrow"}.get(days, local_due.strftime("%A %d %B"))
        return ToolResult(
            output=json.dumps(
                {
                    "set": "reminder",
                    "text": text,
                    "at": local_due.strftime("%H:%M"),
                    "day": day,
                    "in": spoken_duration(due.timestamp() - now.timestamp()),
                }
            )
        )

    def _list(self) -> ToolResult:
        reading = self._read()
        items: list[dict[str, Any]] = []
        for alarm in sorted(self._alarms.values(), key=_due_key):
            due_in = reading.due_in_s(alarm)
            if due_in is None:
                items.append(
                    {
                        "kind": alarm.kind.value,
                        "name": alarm.label,
                        "remaining": "unknown until the clock is set (no time sync yet)",
                    }
                )
                continue
            left = max(0.0, due_in)
            items.append(
                {
                    "kind": alarm.kind.value,
                    "name": alarm.label,
                    "remaining": spoken_duration(left),
                    "remaining_s": round(left),
                    "at": self._local(reading.wall_ts + left).strftime("%H:%M"),
                }
            )
        return ToolResult(output=json.dumps({"count": len(items), "timers": items}))

    async def _cancel(self, args: dict[str, Any]) -> ToolResult:
        if not self._alarms:
            return tool_error("no_timers", "there is no timer or reminder to cancel")
        by_recent = sorted(self._alarms.values(), key=lambda a: a.created_ts, reverse=True)
        if args.get("all"):
            chosen = by_recent
        elif query := str(args.get("name") or "").strip():
            winner, tied = best_match(query, [(a, a.label) for a in by_recent])
            if winner is None and not tied:
                return tool_error(
                    "no_such_timer",
                    f"no timer or reminder called {query!r}",
                    name=query,
                    timers=[a.label for a in by_recent],
                )
            # Several equally good matches (two 'pasta' timers): the newest.
            chosen = [winner or tied[0]]
        else:
            chosen = by_recent[:1]
        for alarm in chosen:
            await require_ctx(self._ctx, self.name).storage.delete_setting(KEY_PREFIX + alarm.id)
            self._alarms.pop(alarm.id, None)
        self._wake.set()
        return ToolResult(
            output=json.dumps(
                {
                    "cancelled": [a.label for a in chosen],
                    "remaining": len(self._alarms),
                }
            )
        )

    # -- helpers -------------------------------------------------------------

    async def _add(self, alarm: Alarm) -> None:
        ctx = require_ctx(self._ctx, self.name)
        await ctx.storage.set_setting(KEY_PREFIX + alarm.id, alarm.to_json())
        self._alarms[alarm.id] = alarm
        self._wake.set()
        ctx.logger.info(
            "timer_set",
            id=alarm.id,
            kind=alarm.kind.value,
            due_ts=alarm.due_ts,
            due_in_s=round(alarm.due_ts - alarm.created_ts, 1),
        )

    def _read(self) -> Reading:
        clock = self._clock
        return Reading(
            wall_ts=clock.utc_now().timestamp(),
            steady_s=clock.steady_s(),
            boot_id=clock.boot_id(),
            plausible=clock.wall_plausible(),
        )

    def _local(self, ts: float) -> datetime:
        return datetime.fromtimestamp(ts, self._tz)


_UNITS = {"hours": 3600.0, "minutes": 60.0, "seconds": 1.0}


def _due_key(alarm: Alarm) -> float:
    return alarm.due_ts


def _new_id() -> str:
    return secrets.token_hex(4)
