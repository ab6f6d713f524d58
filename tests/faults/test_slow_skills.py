"""Cases 5 and 13: tool budgets, abandoned calls, and a stop that keeps its budget.

A skill that swallows ``CancelledError`` must not hold a turn (the call is
answered at its budget and the skill left behind) nor SIGTERM (the daemon
exits within the unit's ``TimeoutStopSec``). A tool may declare a longer
budget than the host's default (``ask_brain``: 20 s), and the model still
gets its answer.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from huxley_sdk import Skill
from huxleyd.providers.events import ResponseStarted, ToolCall
from huxleyd.skillhost.host import SkillHost
from huxleyd.skills.brain import BrainSkill
from huxleyd.turns.coordinator import Coordinator
from huxleyd.turns.parts import TurnPorts, TurnSettings
from huxleyd.turns.state import TurnState
from tests.e2e.harness import until
from tests.e2e.process import DaemonProcess, write_daemon_config
from tests.fakes.distributions import installed_skill
from tests.fakes.turn_ports import RecordingAudio, RecordingProvider, RecordingVolume
from tests.fakes.turn_rig import done
from tests.faults.misbehaving_skill import MisbehavingSkill


async def test_a_call_past_its_budget_is_answered_without_waiting_for_the_skill() -> None:
    skill = MisbehavingSkill(run_for_s=1.5)
    host = SkillHost([as_skill(skill)], tool_timeout_s=0.05)
    outcome = await host.call("c1", "stubborn", "{}")
    assert outcome.error == "timeout"
    assert skill.finished == 0  # answered while the skill still runs: abandoned, not awaited
    assert host.abandoned == 1


async def test_a_cancelled_call_is_abandoned_not_awaited() -> None:
    skill = MisbehavingSkill(run_for_s=1.5)
    host = SkillHost([as_skill(skill)], tool_timeout_s=30.0)
    call = asyncio.create_task(host.call("c1", "stubborn", "{}"))
    await until(lambda: skill.started == 1, "the call runs")
    call.cancel()  # a barge-in or the shutdown cancels the turn's calls
    await asyncio.wait({call}, timeout=2.0)
    assert call.cancelled()
    assert skill.finished == 0 and skill.cancels_swallowed >= 1
    assert host.abandoned == 1


async def test_a_stubborn_tool_does_not_block_the_turn() -> None:
    provider = RecordingProvider()
    skill = MisbehavingSkill(run_for_s=1.5)
    coordinator = Coordinator(
        TurnPorts(
            provider=provider,
            audio=RecordingAudio(),
            volume=RecordingVolume(),
            host=SkillHost([as_skill(skill)], tool_timeout_s=0.05),
        ),
        settings=TurnSettings(silent_response_timeout_s=30.0),
    )
    await coordinator.start()
    try:
        coordinator.say("do the stubborn thing")
        call = ToolCall("r1", "c1", "stubborn", "{}")
        coordinator.on_provider_event(ResponseStarted("r1"))
        coordinator.on_provider_event(call)
        coordinator.on_provider_event(done("r1", call, audio=False))
        await until(lambda: "c1" in provider.outputs(), "the model gets an answer", 4.0)
        assert json.loads(provider.outputs()["c1"])["error"] == "timeout"
        assert coordinator.state is TurnState.AWAITING_NEXT_RESPONSE  # the follow-up is asked
        assert skill.finished == 0
    finally:
        await asyncio.wait_for(coordinator.close(), 4.0)


async def test_a_tool_with_a_declared_budget_answers_past_the_host_default() -> None:
    skill = MisbehavingSkill()
    host = SkillHost([as_skill(skill)], tool_timeout_s=0.05)
    call = asyncio.create_task(host.call("c1", "slow", "{}"))
    await asyncio.sleep(0.3)  # well past the host's default budget
    assert not call.done()
    skill.release.set()
    outcome = await asyncio.wait_for(call, 5.0)
    assert outcome.ok and json.loads(outcome.output) == {"slow": "done"}


def test_ask_brain_declares_a_budget_longer_than_its_own_timeout() -> None:
    brain = as_skill(BrainSkill())
    host = SkillHost([brain], tool_timeout_s=8.0)
    assert host.budget_s(brain, "ask_brain") > 20.0  # its own timeout_s is 20 s


def as_skill(skill: object) -> Skill:
    """Our skills satisfy the Skill protocol at run time (SkillHost checks it)."""
    return cast(Skill, skill)


SCENARIO = (
    'name = "stubborn"\n[[turns]]\nhear = "hold on"\n[[turns.responses]]\n'
    'say = "Working on it."\ntool_calls = [{ name = "stubborn" }]\n'
    '[[turns.responses]]\nsay = "Done."\n'
)


def test_sigterm_during_a_stubborn_tool_exits_within_the_stop_timeout(tmp_path: Path) -> None:
    source = (Path(__file__).parent / "misbehaving_skill.py").read_text()
    with installed_skill(
        tmp_path / "site",
        "fault-misbehaving-skill",
        "misbehaving = fault_misbehaving_skill:MisbehavingSkill",
        source,
    ) as site:
        config = write_daemon_config(
            tmp_path, scenario=SCENARIO, skills="[skills.system]\n[skills.misbehaving]\n"
        )
        daemon = DaemonProcess(config, env={"PYTHONPATH": str(site)})
        try:
            daemon.wait_for_log("daemon_started")
            say = daemon_ctl(daemon, "say", "hold on")
            assert say.returncode == 0, say.stderr
            daemon.wait_for_log("misbehaving_started")
            started = time.monotonic()
            status = daemon.terminate(timeout_s=19.0)  # TimeoutStopSec=20
            took_s = time.monotonic() - started
        finally:
            daemon.kill()
    assert status == 0, daemon.output()[-3000:]
    assert took_s < 19.0


def daemon_ctl(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "huxleyd.control.cli", "--socket", str(daemon.socket), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
