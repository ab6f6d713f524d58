"""A host that crashes, hangs or floods is killed at once, and every call still answers.

The daemon's side never waits past a deadline: a crash is the link closing,
a hang is a Ping without Pong for 2 s (the probe's ``block`` holds its
event loop in ``time.sleep``), a flood is more messages in one second than
the link admits. Each ends with ``on_down`` told why and the pending call
answered ``tool_failed``; a fresh setup starts a fresh host.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from huxleyd.skillhost.hostpath.huxley_skillhost.link import RateGate
from huxleyd.skillhost.skillenv import SkillsEnv
from tests.skillhost.rig import probe_rig


async def test_a_crash_answers_the_call_and_is_reported(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        outcome = await rig.call("crash")
        assert outcome.error == "tool_failed"
        assert '"exception": "SkillHostError"' in outcome.output
        assert "exited (status 3)" in rig.down.get_nowait()


async def test_a_hung_host_is_killed_within_the_pong_deadline(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path, ping_every_s=0.2) as rig:
        started = time.monotonic()
        outcome = await rig.call("block", seconds=30)
        took_s = time.monotonic() - started
        assert outcome.error == "tool_failed"
        assert took_s < 4.0, f"the call waited {took_s:.1f} s on a hung host (budget 8 s)"
        assert "no answer to Ping within 2 s" in rig.down.get_nowait()
        pid = rig.skill.link.pid if rig.skill.link else None
        assert pid is not None and rig.skill.pid is None  # killed, not running


async def test_a_flood_is_cut_off(probe_env: SkillsEnv, tmp_path: Path) -> None:
    # The gate counts what the daemon reads, and on a loaded CI machine it
    # read fewer than the 2,000 a second the device allows (18,509 in the 8 s
    # budget: a timeout), or the 2 s Pong deadline came first. So the test
    # pings once a minute and allows 200 a second: the flood still exceeds
    # that on any machine, and only the gate can cut the host.
    async with probe_rig(probe_env, tmp_path, ping_every_s=60.0) as rig:
        assert rig.skill.link is not None
        rig.skill.link.flood_gate = RateGate(limit_per_s=200)
        outcome = await rig.call("flood")
        assert outcome.error == "tool_failed"
        assert "flooded the link" in rig.down.get_nowait()


async def test_setting_up_again_starts_a_fresh_host(probe_env: SkillsEnv, tmp_path: Path) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        first = rig.skill.pid
        await rig.call("crash")
        assert rig.host.take_out("probe", "crashed")
        assert rig.host.tools == []  # its tools are not offered while it is out
        context = rig.context
        assert await rig.host.retry_setup("probe", context)
        assert rig.skill.pid not in (None, first)
        assert await rig.output("echo", text="back") == {"echo": "back"}


async def test_a_teardown_that_never_ends_costs_its_budget_and_the_host(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    """Whoever gives up on a stop first (the host's teardown deadline, or the
    shutdown's own budget cancelling it) leaves no host process behind."""
    async with probe_rig(probe_env, tmp_path) as rig:
        await rig.output("stubborn")
        assert rig.skill.link is not None
        process = rig.skill.link.process
        assert process is not None
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(rig.skill.teardown(), 1.0)  # the shutdown's budget
        await asyncio.wait_for(process.wait(), 2.0)  # killed, not left running
        assert rig.down.empty()  # a stop is not a crash
