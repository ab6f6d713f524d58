"""The timers skill, driven through huxley_sdk.testing with a fake wall clock."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any, cast

import pytest

from huxley_sdk import InjectPriority, SkillContext
from huxley_sdk.context import InjectTurnAndWait
from huxley_sdk.testing import MemoryStorage, ctx_recorder, make_test_context
from huxleyd.skills.clocktext import parse_clock_time, spoken_duration
from huxleyd.skills.skillclock import SystemClock, system_clock_for
from huxleyd.skills.timers import KEY_PREFIX, TimersSkill
from tests.fakes.clock import FakeSystemClock

START = datetime(2024, 3, 10, 12, 0, tzinfo=UTC)


def announced(ctx: SkillContext) -> list[Any]:
    """What the skill queued (each timer also waits on it: not a second announcement)."""
    return [turn for turn in ctx_recorder(ctx).injected if not turn.wait]


async def started(
    clock: FakeSystemClock,
    storage: MemoryStorage | None = None,
    config: dict[str, Any] | None = None,
    poll_s: float = 1.0,
) -> tuple[TimersSkill, SkillContext]:
    skill = TimersSkill(clock=clock, poll_s=poll_s)
    ctx = make_test_context(name="timers", storage=storage, config=config)
    await skill.setup(ctx)
    return skill, ctx


async def call(skill: TimersSkill, tool: str, **args: Any) -> dict[str, Any]:
    result = await skill.handle(tool, args)
    assert result.side_effect is None
    data: dict[str, Any] = json.loads(result.output)
    return data


async def eventually(predicate: Callable[[], bool], steps: int = 2000) -> None:
    """Yield to the loop (1 ms at a time) until ``predicate`` holds; fail after ``steps``."""
    for _ in range(steps):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never became true")


async def test_set_list_and_cancel() -> None:
    clock = FakeSystemClock(START)
    skill, _ = await started(clock)
    assert await call(skill, "set_timer", minutes=10, name="pasta") == {
        "set": "timer",
        "name": "pasta",
        "duration": "10 minutes",
        "ends_at": "12:10",
    }
    await call(skill, "set_timer", seconds=90)
    clock.advance(seconds=30)
    listed = await call(skill, "list_timers")
    assert listed["count"] == 2
    assert [(t["name"], t["remaining_s"], t["remaining"]) for t in listed["timers"]] == [
        ("1 minute 30 seconds timer", 60, "1 minute"),
        ("pasta", 570, "9 minutes 30 seconds"),
    ]
    # By name, with a typo; then the only one left without a name.
    assert (await call(skill, "cancel_timer", name="psta"))["cancelled"] == ["pasta"]
    assert await call(skill, "cancel_timer") == {
        "cancelled": ["1 minute 30 seconds timer"],
        "remaining": 0,
    }
    assert (await call(skill, "list_timers"))["count"] == 0
    assert (await call(skill, "cancel_timer"))["error"] == "no_timers"
    await skill.teardown()


async def test_cancel_without_name_takes_the_most_recent_and_all_takes_all() -> None:
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock)
    await call(skill, "set_timer", minutes=5, name="eggs")
    clock.advance(seconds=1)
    await call(skill, "set_timer", minutes=20, name="bread")
    clock.advance(seconds=1)
    await call(skill, "set_reminder", time="18:00", text="call mum")
    assert (await call(skill, "cancel_timer"))["cancelled"] == ["call mum"]
    assert (await call(skill, "cancel_timer", all=True))["cancelled"] == ["bread", "eggs"]
    assert await ctx.storage.list_settings(KEY_PREFIX) == []
    await skill.teardown()


async def test_a_due_timer_is_announced_then_deleted() -> None:
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock)
    await call(skill, "set_timer", minutes=10, name="pasta")
    clock.advance(minutes=9, seconds=59)
    assert await skill.fire_due() == 0
    clock.advance(seconds=1)
    assert await skill.fire_due() == 1
    [turn] = announced(ctx)
    assert turn.priority is InjectPriority.BLOCK_BEHIND_COMMS
    assert turn.dedup_key is not None and turn.dedup_key.startswith("timer:")
    assert "'pasta' timer is done" in turn.prompt
    assert "late" not in turn.prompt
    assert await ctx.storage.list_settings(KEY_PREFIX) == []
    assert await skill.fire_due() == 0
    await skill.teardown()


async def test_the_background_loop_fires_by_itself() -> None:
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock, poll_s=0.001)
    await call(skill, "set_timer", seconds=30)
    await asyncio.sleep(0.01)
    assert announced(ctx) == []
    clock.advance(seconds=30)
    await eventually(lambda: len(announced(ctx)) == 1)
    assert "30 seconds timer is done" in announced(ctx)[0].prompt
    await skill.teardown()


async def test_reminder_times_are_local_to_the_persona() -> None:
    # 12:00 UTC on the day New York moves to daylight time is 08:00 EDT (UTC-4).
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock, config={"timezone": "America/New_York"})
    later = await call(skill, "set_reminder", time="09:15", text="take the pills")
    assert later == {
        "set": "reminder",
        "text": "take the pills",
        "at": "09:15",
        "day": "today",
        "in": "1 hour 15 minutes",
    }
    passed = await call(skill, "set_reminder", time="7:30 am", text="walk the dog")
    assert passed["day"] == "tomorrow"
    assert passed["at"] == "07:30"
    dated = await call(skill, "set_reminder", time="19:00", text="dinner", date="2024-03-14")
    assert dated["day"] == "Thursday 14 March"
    stored = sorted(json.loads(v)["due_ts"] for _, v in await ctx.storage.list_settings(KEY_PREFIX))
    assert stored == [
        datetime(2024, 3, 10, 13, 15, tzinfo=UTC).timestamp(),
        datetime(2024, 3, 11, 11, 30, tzinfo=UTC).timestamp(),
        datetime(2024, 3, 14, 23, 0, tzinfo=UTC).timestamp(),
    ]
    clock.advance(hours=1, minutes=15)
    assert await skill.fire_due() == 1
    prompt = announced(ctx)[0].prompt
    assert "at 09:15: take the pills" in prompt
    assert "late" not in prompt
    await skill.teardown()


async def test_timers_survive_a_restart_and_fire_after_it() -> None:
    clock = FakeSystemClock(START)
    storage = MemoryStorage()
    first, _ = await started(clock, storage)
    await call(first, "set_timer", minutes=3, name="tea")
    await first.teardown()
    clock.advance(minutes=1)
    second, ctx = await started(clock, storage)
    [timer] = (await call(second, "list_timers"))["timers"]
    assert (timer["name"], timer["remaining_s"]) == ("tea", 120)
    clock.advance(minutes=2)
    assert await second.fire_due() == 1
    assert "'tea' timer" in announced(ctx)[0].prompt
    await second.teardown()


async def test_a_timer_due_during_downtime_fires_once_saying_it_is_late() -> None:
    clock = FakeSystemClock(START)
    storage = MemoryStorage()
    first, _ = await started(clock, storage)
    await call(first, "set_timer", minutes=5, name="oven")
    await first.teardown()

    clock.advance(minutes=17)  # off for 17 minutes: 12 minutes past due
    second, ctx = await started(clock, storage)
    # The firing loop's first pass and this call share a lock: exactly one fires.
    await second.fire_due()
    [turn] = announced(ctx)
    assert "late by 12 minutes" in turn.prompt
    assert await storage.list_settings(KEY_PREFIX) == []
    await second.teardown()

    third, ctx3 = await started(clock, storage)
    assert await third.fire_due() == 0
    await asyncio.sleep(0.01)
    assert announced(ctx3) == []
    await third.teardown()


async def test_the_timer_is_deleted_only_after_inject_turn_returned() -> None:
    clock = FakeSystemClock(START)
    storage = MemoryStorage()
    seen_in_storage: list[int] = []

    async def failing_inject(prompt: str, **_: Any) -> bool:
        seen_in_storage.append(len(await storage.list_settings(KEY_PREFIX)))
        raise ConnectionError("runtime went away")

    skill = TimersSkill(clock=clock)
    ctx = dataclasses.replace(
        make_test_context(storage=storage),
        inject_turn_and_wait=cast(InjectTurnAndWait, failing_inject),
    )
    await skill.setup(ctx)
    await call(skill, "set_timer", seconds=5)
    clock.advance(seconds=5)
    with pytest.raises(ConnectionError):
        await skill.fire_due()
    assert seen_in_storage[0] == 1
    assert len(await storage.list_settings(KEY_PREFIX)) == 1  # kept for the next try
    await skill.teardown()


@pytest.mark.parametrize(
    ("tool", "args", "error"),
    [
        ("set_timer", {}, "invalid_duration"),
        ("set_timer", {"minutes": -1, "seconds": 120}, "invalid_duration"),
        ("set_timer", {"minutes": "soon"}, "invalid_duration"),
        ("set_timer", {"hours": 25}, "invalid_duration"),
        ("set_reminder", {"time": "25:00", "text": "x"}, "invalid_time"),
        ("set_reminder", {"time": "teatime", "text": "x"}, "invalid_time"),
        ("set_reminder", {"time": "10:00", "text": "  "}, "missing_text"),
        ("set_reminder", {"time": "10:00", "text": "x", "date": "next friday"}, "invalid_date"),
        ("set_reminder", {"time": "10:00", "text": "x", "date": "2024-03-09"}, "time_passed"),
        ("cancel_timer", {"name": "laundry"}, "no_timers"),
    ],
)
async def test_invalid_arguments_get_a_clear_output(
    tool: str, args: dict[str, Any], error: str
) -> None:
    skill, ctx = await started(FakeSystemClock(START))
    data = await call(skill, tool, **args)
    assert data["error"] == error
    assert data["message"]
    assert await ctx.storage.list_settings(KEY_PREFIX) == []
    await skill.teardown()


async def test_cancelling_an_unknown_name_lists_what_exists() -> None:
    skill, _ = await started(FakeSystemClock(START))
    await call(skill, "set_timer", minutes=4, name="eggs")
    data = await call(skill, "cancel_timer", name="laundry")
    assert (data["error"], data["timers"]) == ("no_such_timer", ["eggs"])
    assert (await call(skill, "list_timers"))["count"] == 1
    await skill.teardown()


async def test_a_corrupt_stored_timer_is_dropped_not_fatal() -> None:
    storage = MemoryStorage()
    await storage.set_setting(KEY_PREFIX + "bad", "{not json")
    skill, _ = await started(FakeSystemClock(START), storage)
    assert (await call(skill, "list_timers"))["count"] == 0
    assert await storage.list_settings(KEY_PREFIX) == []
    await skill.teardown()


async def test_an_unknown_time_zone_fails_setup_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"'timezone'.*Mars/Olympus"):
        await started(FakeSystemClock(START), config={"timezone": "Mars/Olympus"})


def test_parse_clock_time() -> None:
    assert parse_clock_time("07:30") == time(7, 30)
    assert parse_clock_time("7pm") == time(19, 0)
    assert parse_clock_time("12:05 am") == time(0, 5)
    assert parse_clock_time("19h45") == time(19, 45)
    for bad in ("24:00", "13 pm", "7:5", ""):
        with pytest.raises(ValueError, match="expected"):
            parse_clock_time(bad)


def test_spoken_duration() -> None:
    assert spoken_duration(1) == "1 second"
    assert spoken_duration(270) == "4 minutes 30 seconds"
    assert spoken_duration(720) == "12 minutes"
    assert spoken_duration(3600 + 300 + 7) == "1 hour 5 minutes"
    assert spoken_duration(2 * 86400 + 3 * 3600) == "2 days 3 hours"


def test_the_system_clock_trusts_the_wall_clock_only_on_evidence(tmp_path: Path) -> None:
    flag, rtc, boot = tmp_path / "synchronized", tmp_path / "rtc0", tmp_path / "boot_id"
    boot.write_text("5d2c0b1e-aaaa-bbbb-cccc-000000000001\n")
    kernel: list[bool | None] = [None]  # adjtimex cannot be asked (a sandbox)
    clock = SystemClock(sync_flag=flag, rtc=rtc, boot_id_file=boot, kernel_synced=lambda: kernel[0])
    assert clock.boot_id() == "5d2c0b1e-aaaa-bbbb-cccc-000000000001"
    assert not clock.wall_plausible()  # no flag, no kernel word, no RTC
    kernel[0] = False
    assert not clock.wall_plausible()
    flag.touch()  # systemd-timesyncd synced
    assert clock.wall_plausible()
    flag.unlink()
    assert clock.wall_plausible()  # once trusted, later steps are corrections
    assert SystemClock(sync_flag=flag, rtc=rtc, kernel_synced=lambda: True).wall_plausible()
    rtc.mkdir()
    assert SystemClock(sync_flag=flag, rtc=rtc, kernel_synced=lambda: None).wall_plausible()
    configured = system_clock_for({"time_sync_flag": str(tmp_path / "elsewhere")})
    (tmp_path / "elsewhere").touch()
    assert configured.wall_plausible()


async def test_next_alert_is_the_soonest_timer_or_reminder_and_none_without() -> None:
    # What the daemon asks before a reboot for updates (control/reboot.py).
    clock = FakeSystemClock(START)
    skill, _ = await started(clock)
    assert skill.next_alert_in_s() is None
    await call(skill, "set_timer", seconds=600, label="tea")
    await call(skill, "set_reminder", time="12:05", text="call mum")
    assert skill.next_alert_in_s() == pytest.approx(300.0)
    clock.advance(minutes=6)  # the reminder is due, not yet heard
    assert skill.next_alert_in_s() == pytest.approx(-60.0)
    await skill.teardown()
