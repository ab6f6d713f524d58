"""The timers skill: kitchen timers and reminders at a local time.

Every timer or reminder is one JSON value in the skill's storage under
``timer:<id>``, holding its due time as UTC epoch seconds, so it survives a
reboot. ``setup`` loads them and starts one supervised background task that
fires whatever is due through ``ctx.inject_turn_and_wait`` (BLOCK_BEHIND_COMMS:
a book pauses for it, a live call does not). One that came due while the
device was off fires once on start and says how late it is. A fired entry is
deleted only once its announcement was *heard*: while the provider is down
it waits in the inject queue, and a restart before then fires it again on
start instead of losing it; one that expired unheard is announced again
(late) on the next pass. The dedup key ``timer:<id>`` keeps a repeat from doubling.

The loop re-reads the clock at least every ``poll_s`` seconds instead of
sleeping until the due time: a Raspberry Pi has no real-time clock, and its
wall clock jumps when NTP syncs after boot. Tests inject ``now``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from huxley_sdk import (
    BackgroundTaskHandle,
    InjectPriority,
    SkillContext,
    ToolDefinition,
    ToolResult,
)

from .media import best_match

KEY_PREFIX = "timer:"
"""Storage key prefix; the rest of the key is the timer's id."""
LATE_GRACE_S = 30.0
"""Fired later than this after its due time, a timer says how late it is."""
MAX_TIMER_S = 24 * 3600
"""Longer than a day is a reminder, not a timer."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


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
        )

    @property
    def label(self) -> str:
        """What the user would call it: its name, its text, or its duration."""
        if self.name:
            return self.name
        if self.kind is Kind.REMINDER and self.text:
            return self.text
        return spoken_duration(self.duration_s or 0) + " timer"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def spoken_duration(seconds: float) -> str:
    """``"4 minutes 30 seconds"``, ``"2 hours 5 minutes"``: precise where it matters."""
    total = max(0, round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        parts = [_plural(days, "day")] + ([_plural(hours, "hour")] if hours else [])
    elif hours:
        parts = [_plural(hours, "hour")] + ([_plural(minutes, "minute")] if minutes else [])
    elif minutes:
        show_secs = secs and minutes < 10
        parts = [_plural(minutes, "minute")] + ([_plural(secs, "second")] if show_secs else [])
    else:
        parts = [_plural(secs, "second")]
    return " ".join(parts)


_TIME_RE = re.compile(r"^\s*(\d{1,2})(?:[:.h](\d{2}))?\s*([ap])?\.?\s*m?\.?\s*$", re.IGNORECASE)


def parse_clock_time(text: str) -> time:
    """``"07:30"``, ``"7:30 pm"``, ``"19h30"``, ``"7pm"`` → a time; ValueError otherwise."""
    match = _TIME_RE.match(text)
    if not match:
        raise ValueError(f"expected a time like 07:30 or 19:30, got {text!r}")
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    meridiem = (match.group(3) or "").lower()
    if meridiem:
        if not 1 <= hour <= 12:
            raise ValueError(f"expected an hour 1-12 with am/pm, got {text!r}")
        hour = hour % 12 + (12 if meridiem == "p" else 0)
    if hour > 23 or minute > 59:
        raise ValueError(f"expected a time between 00:00 and 23:59, got {text!r}")
    return time(hour, minute)


def next_occurrence(at: time, now: datetime, tz: ZoneInfo, on: date | None = None) -> datetime:
    """The local ``at`` on ``on`` (default: today, or tomorrow when already past), as UTC."""
    local_now = now.astimezone(tz)
    day = on or local_now.date()
    when = datetime.combine(day, at, tzinfo=tz)
    if on is None and when <= local_now:
        when = datetime.combine(day + timedelta(days=1), at, tzinfo=tz)
    # Round-trip through UTC so a time in a DST gap lands on a real instant.
    return when.astimezone(UTC)


def _error(code: str, message: str, **details: Any) -> ToolResult:
    return ToolResult(output=json.dumps({"error": code, "message": message, **details}))


class TimersSkill:
    """Timers (a duration) and reminders (a local time), persisted and re-armed on start."""

    name = "timers"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"timezone": {"type": "string", "minLength": 1}},
        "additionalProperties": False,
    }
    """``[skills.timers]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(self, *, now: Callable[[], datetime] = _utc_now, poll_s: float = 1.0) -> None:
        """``now`` returns an aware datetime; ``poll_s`` bounds how stale the clock may get."""
        self._now = now
        self._poll_s = poll_s
        self._ctx: SkillContext | None = None
        self._tz = ZoneInfo("UTC")
        self._alarms: dict[str, Alarm] = {}
        self._wake = asyncio.Event()
        self._fire_lock = asyncio.Lock()
        self._task: BackgroundTaskHandle | None = None

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
            if self._alarms:
                soonest = min(a.due_ts for a in self._alarms.values())
                left = soonest - self._now_ts()
                # One still due was not heard: try again after a poll, not at once.
                delay = min(delay, left) if left > 0 else delay
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def fire_due(self) -> int:
        """Announce every timer due by now, oldest first; delete each once heard.

        Returns how many were heard. All due timers are queued together (the
        inject queue orders them); one not heard (expired, failed, the daemon
        stopping) stays stored and comes round again. The firing loop calls
        this; it is safe to call concurrently (tests do).
        """
        self._require_ctx()
        async with self._fire_lock:
            now = self._now_ts()
            due = sorted((a for a in self._alarms.values() if a.due_ts <= now), key=_due_key)
            heard = await asyncio.gather(
                *(self._announce(alarm, now - alarm.due_ts) for alarm in due)
            )
        return sum(heard)

    async def _announce(self, alarm: Alarm, late_s: float) -> bool:
        ctx = self._require_ctx()
        key = f"timer:{alarm.id}"
        prompt = self._prompt(alarm, late_s)
        await ctx.inject_turn(prompt, dedup_key=key, priority=InjectPriority.BLOCK_BEHIND_COMMS)
        # huxleyd answers whether it was heard (False: expired, failed, shut
        # down first); a runtime that answers nothing is taken at its word.
        outcome: object = await ctx.inject_turn_and_wait(prompt, dedup_key=key)  # type: ignore[func-returns-value]
        heard = outcome is not False
        if not heard:
            ctx.logger.warning("timer_not_heard", id=alarm.id, kind=alarm.kind.value)
            return False
        # Only now: a restart before this line repeats the announcement on the
        # next start instead of losing it.
        await ctx.storage.delete_setting(KEY_PREFIX + alarm.id)
        self._alarms.pop(alarm.id, None)
        ctx.logger.info("timer_fired", id=alarm.id, kind=alarm.kind.value, late_s=round(late_s, 1))
        return True

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
            return _error(
                "invalid_duration",
                "hours, minutes and seconds must be non-negative numbers",
                args={k: args.get(k) for k in _UNITS},
            )
        total = sum(parts)
        if not 0 < total <= MAX_TIMER_S:
            return _error(
                "invalid_duration",
                "a timer lasts more than 0 seconds and at most 24 hours; use a reminder beyond",
                seconds=total,
            )
        name = str(args.get("name") or "").strip() or None
        now = self._now_ts()
        alarm = Alarm(_new_id(), Kind.TIMER, now + total, now, name=name, duration_s=total)
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
            return _error("missing_text", "say what to remind the user of")
        try:
            at = parse_clock_time(str(args.get("time") or ""))
        except ValueError as exc:
            return _error("invalid_time", str(exc))
        on: date | None = None
        if args.get("date"):
            try:
                on = date.fromisoformat(str(args["date"]))
            except ValueError:
                return _error("invalid_date", f"expected YYYY-MM-DD, got {args['date']!r}")
        now = self._now()
        due = next_occurrence(at, now, self._tz, on)
        if due <= now:
            return _error("time_passed", f"{on} {at:%H:%M} has already passed")
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
        now = self._now_ts()
        items = []
        for alarm in sorted(self._alarms.values(), key=_due_key):
            left = max(0.0, alarm.due_ts - now)
            items.append(
                {
                    "kind": alarm.kind.value,
                    "name": alarm.label,
                    "remaining": spoken_duration(left),
                    "remaining_s": round(left),
                    "at": self._local(alarm.due_ts).strftime("%H:%M"),
                }
            )
        return ToolResult(output=json.dumps({"count": len(items), "timers": items}))

    async def _cancel(self, args: dict[str, Any]) -> ToolResult:
        if not self._alarms:
            return _error("no_timers", "there is no timer or reminder to cancel")
        by_recent = sorted(self._alarms.values(), key=lambda a: a.created_ts, reverse=True)
        if args.get("all"):
            chosen = by_recent
        elif query := str(args.get("name") or "").strip():
            winner, tied = best_match(query, [(a, a.label) for a in by_recent])
            if winner is None and not tied:
                return _error(
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
            await self._require_ctx().storage.delete_setting(KEY_PREFIX + alarm.id)
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
        ctx = self._require_ctx()
        await ctx.storage.set_setting(KEY_PREFIX + alarm.id, alarm.to_json())
        self._alarms[alarm.id] = alarm
        self._wake.set()
        ctx.logger.info("timer_set", id=alarm.id, kind=alarm.kind.value, due_ts=alarm.due_ts)

    def _now_ts(self) -> float:
        return self._now().timestamp()

    def _local(self, ts: float) -> datetime:
        return datetime.fromtimestamp(ts, self._tz)

    def _require_ctx(self) -> SkillContext:
        if self._ctx is None:
            raise RuntimeError("timers: setup() was not called")
        return self._ctx


_UNITS = {"hours": 3600.0, "minutes": 60.0, "seconds": 1.0}


def _due_key(alarm: Alarm) -> float:
    return alarm.due_ts


def _new_id() -> str:
    return secrets.token_hex(4)
