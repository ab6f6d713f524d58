"""The wall clock steps (NTP after boot on a Pi with no RTC): durations do not move.

A timer is a duration on a clock no step moves (CLOCK_BOOTTIME) in the boot
it was set in; a reminder is a time of day on the wall clock, and waits for
a plausible one. The skill's clocks are injected (:class:`FakeSystemClock`);
the daemon's step detector gets injected wall and steady clocks.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from huxley_sdk import SkillContext
from huxley_sdk.context import InjectTurnAndWait
from huxley_sdk.testing import MemoryStorage, ctx_recorder, make_test_context
from huxleyd.app.control import check_wall_clock
from huxleyd.clock import STEP_THRESHOLD_S, WallClockWatch
from huxleyd.skills.timers import KEY_PREFIX, TimersSkill
from tests.fakes.clock import FakeSystemClock

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def announced(ctx: SkillContext) -> list[str]:
    return [turn.prompt for turn in ctx_recorder(ctx).injected if not turn.wait]


async def started(
    clock: FakeSystemClock, storage: MemoryStorage | None = None
) -> tuple[TimersSkill, SkillContext]:
    # A long poll: the test fires by hand (fire_due), the loop stays out of the way.
    skill = TimersSkill(clock=clock, poll_s=3600.0)
    ctx = make_test_context(name="timers", storage=storage, config={"timezone": "UTC"})
    await skill.setup(ctx)
    return skill, ctx


async def tool(skill: TimersSkill, tool_name: str, /, **args: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((await skill.handle(tool_name, args)).output)
    return data


async def test_a_ten_minute_timer_is_not_fired_by_a_two_hour_step_ahead() -> None:
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock)
    await tool(skill, "set_timer", minutes=10, name="pasta")
    await tool(skill, "set_reminder", time="15:00", text="call mum")
    clock.advance(seconds=2)
    clock.step(hours=2)  # NTP: the clock was 2 h behind
    assert await skill.fire_due() == 0  # was: fired, "late by 1 hour 50 minutes"
    [timer, _] = (await tool(skill, "list_timers"))["timers"]
    assert timer["remaining_s"] == 598
    clock.advance(minutes=9, seconds=58)
    assert await skill.fire_due() == 1
    [prompt] = announced(ctx)
    assert "'pasta' timer" in prompt and "late" not in prompt
    await skill.teardown()


async def test_a_ten_minute_timer_is_not_held_back_by_a_two_hour_step_back() -> None:
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock)
    await tool(skill, "set_timer", minutes=10, name="pasta")
    clock.step(hours=-2)  # the clock was 2 h ahead
    clock.advance(minutes=10)  # was: 2 h 9 min still to go
    assert await skill.fire_due() == 1
    assert "'pasta' timer" in announced(ctx)[0]
    await skill.teardown()


async def test_a_reminder_follows_the_wall_clock_across_steps_and_fires_once() -> None:
    clock = FakeSystemClock(START)
    skill, ctx = await started(clock)
    await tool(skill, "set_reminder", time="13:00", text="call mum")
    clock.step(hours=-2)  # 10:00 now: three hours to go on the wall clock
    clock.advance(hours=2)
    assert await skill.fire_due() == 0
    clock.step(hours=2)  # and forward again: 14:00, an hour past 13:00
    assert await skill.fire_due() == 1
    assert "late by 1 hour" in announced(ctx)[0]
    clock.step(hours=-2)  # back over 13:00 once more: nothing fires twice
    clock.advance(hours=3)
    assert await skill.fire_due() == 0
    assert len(announced(ctx)) == 1
    await skill.teardown()


async def test_after_a_reboot_without_rtc_nothing_wall_bound_fires_until_the_clock_is_plausible() -> (
    None
):
    clock, storage = FakeSystemClock(START), MemoryStorage()
    first, _ = await started(clock, storage)
    await tool(first, "set_timer", minutes=30, name="bread")
    await tool(first, "set_reminder", time="12:20", text="water the plants")
    await first.teardown()
    # Off for an hour; the board boots with last week's clock and no time sync.
    clock.reboot(off_for=timedelta(hours=1), wall_at_boot=START - timedelta(days=7))
    clock.plausible = False
    second, ctx = await started(clock, storage)
    assert await second.fire_due() == 0  # a 1970-ish clock decides nothing
    listed = (await tool(second, "list_timers"))["timers"]
    assert all("unknown until the clock is set" in t["remaining"] for t in listed)
    refused = await tool(second, "set_reminder", time="18:00", text="x")
    assert refused["error"] == "clock_not_set"
    clock.now = START + timedelta(hours=1, minutes=1)  # NTP sets it
    clock.plausible = True
    assert await second.fire_due() == 2
    [prompt] = announced(ctx)  # both in one turn: no burst
    assert "bread" in prompt and "water the plants" in prompt and "late by" in prompt
    assert await storage.list_settings(KEY_PREFIX) == []
    await second.teardown()


async def test_a_timer_from_another_boot_is_reanchored_and_then_ignores_steps() -> None:
    clock, storage = FakeSystemClock(START), MemoryStorage()
    first, _ = await started(clock, storage)
    await tool(first, "set_timer", minutes=30, name="bread")
    await first.teardown()
    clock.reboot(off_for=timedelta(minutes=5))  # a quick power cut; the clock is right
    second, ctx = await started(clock, storage)
    assert await second.fire_due() == 0
    [stored] = await storage.list_settings(KEY_PREFIX)
    assert json.loads(stored[1])["boot_id"] == clock.boot  # anchored to this boot
    clock.step(hours=3)  # a step after that does not fire it
    assert await second.fire_due() == 0
    clock.advance(minutes=25)
    assert await second.fire_due() == 1 and "late" not in announced(ctx)[0]
    await second.teardown()


async def test_a_timer_whose_announcement_was_not_heard_stays_stored() -> None:
    # The mutation audit: deleting the stored timer before the `heard` check
    # passed every test, since no test had inject_turn_and_wait answer False.
    clock, storage = FakeSystemClock(START), MemoryStorage()
    heard = False

    async def inject_and_wait(prompt: str, **_: Any) -> bool:
        return heard

    skill = TimersSkill(clock=clock, poll_s=3600.0)
    ctx = dataclasses.replace(
        make_test_context(storage=storage),
        inject_turn_and_wait=cast(InjectTurnAndWait, inject_and_wait),
    )
    await skill.setup(ctx)
    await tool(skill, "set_timer", seconds=5, name="tea")
    clock.advance(seconds=5)
    assert await skill.fire_due() == 0  # not heard (expired in the queue)
    assert len(await storage.list_settings(KEY_PREFIX)) == 1
    assert (await tool(skill, "list_timers"))["count"] == 1
    heard = True
    await skill.fire_due()  # heard on the next pass (this one or the loop's): now it goes
    assert await storage.list_settings(KEY_PREFIX) == []
    await skill.teardown()


def test_a_step_of_more_than_a_minute_is_logged_with_its_size(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wall, steady = [1_700_000_000.0], [500.0]
    watch = WallClockWatch(wall=lambda: wall[0], steady=lambda: steady[0])

    def passes(seconds: float, step: float = 0.0) -> float | None:
        wall[0] += seconds + step
        steady[0] += seconds
        return watch.check()

    with caplog.at_level(logging.INFO, logger="huxleyd.clock"):
        assert passes(5.0) is None
        assert passes(5.0, step=0.5) is None  # NTP slewing: not a step
        assert passes(5.0, step=STEP_THRESHOLD_S - 1) is None
        assert passes(5.0, step=7200.0) == 7200.0
        assert passes(5.0, step=-7200.0) == -7200.0
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("clock_stepped" in line for line in lines)
    assert "step_s=7200.0" in lines[0] and "step_s=-7200.0" in lines[1]


def test_doctor_says_whether_the_clock_is_synchronised_and_how_it_was_set() -> None:
    wall, steady = [1_700_000_000.0], [500.0]
    watch = WallClockWatch(wall=lambda: wall[0], steady=lambda: steady[0])
    fresh = check_wall_clock(watch, synced=True)
    assert fresh.status == "ok" and "not set since start" in fresh.detail
    wall[0] += 7200.0
    watch.check()
    waiting = check_wall_clock(watch, synced=False)
    assert waiting.status == "warn" and "reminders wait" in waiting.detail
    assert "set 1x since start, last by +7200 s" in waiting.detail
