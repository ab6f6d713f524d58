"""Background tasks and the loop (issue 22, item 3).

Before: a skill's task that died said nothing until shutdown, then a
traceback without the skill's name; a tool calling ``time.sleep`` stalled
the control socket for its length and nothing was logged. Now a death is
logged at once with the skill and the task (a ``ctx.background_task`` is
restarted, as the SDK says), and a stall names the task and its skill;
``doctor`` shows the worst one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from huxleyd.app.loopwatch import IDLE_TICK_S, TICK_S, LoopWatch
from huxleyd.clock import ManualClock
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import Rig, speech, turn, until
from tests.e2e.process import DaemonProcess, ctl, write_daemon_config
from tests.fakes.distributions import installed_skill

BLOCKER = """
import asyncio
import logging
import time

from huxley_sdk import ToolDefinition, ToolResult

log = logging.getLogger("huxley.skill.blocker")


class Blocker:
    name = "blocker"
    tools = [ToolDefinition("nap", "Blocks the loop.")]

    async def setup(self, ctx):
        self.polls = 0

        async def poll():
            self.polls += 1
            log.warning("poller_started run=%d", self.polls)
            await asyncio.sleep(0.01)
            if self.polls == 1:
                raise RuntimeError("the feed went away")
            await asyncio.Event().wait()

        ctx.background_task("poller", poll)

        async def own():
            await asyncio.sleep(0.01)
            raise RuntimeError("own task died")

        self.own = asyncio.get_running_loop().create_task(own(), name="own-feed")

    async def handle(self, tool_name, args):
        time.sleep(0.6)  # the bug under test: blocking the loop
        return ToolResult('{"slept": true}')
"""

SCENARIO = (
    'name = "nap"\n[[turns]]\nhear = "nap"\n[[turns.responses]]\n'
    'say = "Napping."\ntool_calls = [{ name = "nap" }]\n'
    '[[turns.responses]]\nsay = "Done."\n'
)


def test_a_dead_task_and_a_blocking_tool_are_logged_with_their_skill(tmp_path: Path) -> None:
    with installed_skill(tmp_path / "site", "blocker-skill", "blocker = blocker:Blocker", BLOCKER):
        config = write_daemon_config(
            tmp_path, scenario=SCENARIO, skills="[skills.system]\n[skills.blocker]\n"
        )
        daemon = DaemonProcess(config, env={"PYTHONPATH": str(tmp_path / "site")})
        try:
            daemon.wait_for_log("daemon_started")
            # at once, while the daemon runs (not at shutdown):
            daemon.wait_for_log("skill_task_died")
            daemon.wait_for_log("poller_started run=2")  # restarted, as the SDK says
            ctl(daemon.socket, "say", "nap")
            daemon.wait_for_log("loop_stalled ms=6")  # 600 ms and a little more
            doctor = ctl(daemon.socket, "doctor")
        finally:
            assert daemon.terminate() == 0, daemon.output()[-3000:]
    log = daemon.output()
    [died] = [line for line in log.splitlines() if "skill_task_died" in line]
    assert "skill=blocker" in died and "task=own-feed" in died and "own task died" in died
    [crashed] = [line for line in log.splitlines() if "background_task_crashed" in line]
    assert "skill=blocker" in crashed and "task=blocker:poller" in crashed
    [stalled] = [line for line in log.splitlines() if "task=skill-nap" in line]
    assert "loop_stalled" in stalled and "skill=blocker" in stalled
    assert "Task exception was never retrieved" not in log
    [event_loop] = [line for line in doctor.splitlines() if "event loop" in line]
    assert "worst stall" in event_loop and "task skill-nap (skill blocker)" in event_loop


async def test_stalls_are_rate_limited_and_the_worst_is_kept() -> None:
    clock = ManualClock(100.0)
    watch = LoopWatch(clock=clock)
    loop = asyncio.get_running_loop()
    watch.install(loop)
    watch.arm()
    try:

        async def blocks(seconds: float) -> None:
            clock.advance(seconds)  # the step "took" this long on the watch's clock

        for seconds, name in ((0.3, "a"), (0.9, "b"), (0.2, "a"), (0.4, "a")):
            await loop.create_task(blocks(seconds), name=name)
            tick = watch.stalls
            clock.advance(0.05)
            await until(lambda tick=tick: watch.stalls > tick, "the next tick")  # type: ignore[misc]
    finally:
        watch.uninstall()
    assert watch.stalls == 4
    assert watch.worst is not None and watch.worst.task == "b" and watch.worst.late_s >= 0.9
    assert watch._unlogged == 2  # a line for a, one for b; a's next two are counted


class Ticks:
    """The watch's timers: records each tick asked for; :meth:`fire` runs the pending
    one after moving the clock to its due time. Nothing waits on real time."""

    def __init__(self, clock: ManualClock, loop: asyncio.AbstractEventLoop) -> None:
        self.clock = clock
        self.loop = loop
        self.asked: list[float] = []
        self.pending: list[asyncio.TimerHandle] = []

    def time(self) -> float:
        return self.clock.monotonic()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        self.asked.append(delay_s)
        handle = asyncio.TimerHandle(self.clock.monotonic() + delay_s, callback, (), self.loop)
        self.pending.append(handle)
        return handle

    def fire(self) -> None:
        [handle] = [h for h in self.pending if not h.cancelled()]
        self.pending.clear()
        self.clock.advance(handle.when() - self.clock.monotonic())
        handle._run()


@contextlib.contextmanager
def watched() -> Iterator[tuple[ManualClock, Ticks, LoopWatch]]:
    """An armed watch on this loop, its ticks on :class:`Ticks` and a manual clock."""
    clock = ManualClock(100.0)
    loop = asyncio.get_running_loop()
    ticks = Ticks(clock, loop)
    watch = LoopWatch(clock=clock, timers=ticks)
    watch.install(loop)
    watch.arm()
    try:
        yield clock, ticks, watch
    finally:
        watch.uninstall()


async def test_the_tick_is_slow_while_quiet_and_fast_while_audio_flows() -> None:
    """Issue 39: the idle loop's 20 wakeups a second were the watch's 50 ms tick."""
    with watched() as (_, ticks, watch):
        assert ticks.asked == [IDLE_TICK_S]  # quiet from the start
        ticks.fire()
        assert ticks.asked[-1] == IDLE_TICK_S
        watch.set_active(True)  # a press: the pending slow tick is brought in
        assert (
            ticks.asked[-1] == TICK_S and len([h for h in ticks.pending if not h.cancelled()]) == 1
        )
        ticks.fire()
        ticks.fire()
        assert ticks.asked[-2:] == [TICK_S, TICK_S]
        watch.set_active(False)  # the pending fast tick runs; the next one is slow
        ticks.fire()
        assert ticks.asked[-1] == IDLE_TICK_S and watch.stalls == 0


async def test_a_long_step_while_quiet_is_reported_at_once() -> None:
    loop = asyncio.get_running_loop()
    with watched() as (clock, ticks, watch):

        async def blocks() -> None:
            clock.advance(0.4)

        await loop.create_task(blocks(), name="slow")
        assert ticks.asked[-1] == 0.0  # not up to IDLE_TICK_S later
        ticks.fire()
        assert watch.stalls == 1 and watch.worst is not None and watch.worst.task == "slow"
        assert ticks.asked[-1] == IDLE_TICK_S


async def test_the_daemon_ticks_fast_from_the_press_until_the_turn_ends(tmp_path: Path) -> None:
    """The runtime tells the watch when audio flows: the activity the LEDs show."""
    async with Rig(tmp_path, Scenario(turns=(turn(speech(300)),)), skills=("system",)) as rig:
        watch = rig.rt.loop_watch
        assert not watch.active and watch.tick_s == IDLE_TICK_S
        # holds the button while the mic hears a tone, then releases it
        speaking = asyncio.create_task(rig.say_into_mic())
        await until(lambda: watch.active, "the press makes the watch tick fast")
        assert watch.tick_s == TICK_S
        await speaking
        await until(lambda: rig.coordinator.turn is not None, "the turn began")
        await until(lambda: rig.idle() and not watch.active, "quiet again after the reply")
        assert watch.tick_s == IDLE_TICK_S
