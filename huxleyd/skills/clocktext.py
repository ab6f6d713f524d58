"""Times and durations as people say them: parsing "7:30 pm", saying "4 minutes 30 seconds".

Layer: first-party skill support, pure functions (standard library only).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo


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
