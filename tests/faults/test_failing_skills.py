"""A skill that fails is left out, not fatal (issue 22, item 2).

Before: one third-party skill's ``setup`` raising (the Wi-Fi not up yet at
boot) was "exit 1, ``skills.X: setup failed``": a restart loop, then a dead
device; an import error or a rejected persona table stopped the start (exit
78) for every other skill too. Now the daemon runs without that skill,
offers none of its tools, retries a failed setup with backoff, and
``status``, ``huxleyctl skills`` and ``doctor`` show it failed with why.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from huxleyd.app.control import RuntimeControl
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import Rig, until
from tests.e2e.process import ROOT, DaemonProcess, ctl, write_daemon_config
from tests.fakes.distributions import installed_skill

FLAKY = '''
from pathlib import Path
from huxley_sdk import ToolDefinition, ToolResult


class FlakySkill:
    """Its setup needs "the network": a file that a test creates."""

    name = "flaky"
    setups = 0

    @property
    def tools(self):
        return [ToolDefinition("flaky_ping", "Answers once the network is up.")]

    async def setup(self, ctx):
        type(self).setups += 1
        if not Path(ctx.config["network_flag"]).exists():
            raise OSError("the network is not up yet")

    async def handle(self, tool_name, args):
        return ToolResult('{"pong": true}')
'''

BROKEN_IMPORT = "raise ImportError(\"No module named 'wifi_helper'\")\n"


@contextmanager
def third_party_skills(tmp: Path) -> Iterator[str]:
    """``flaky`` and ``broken`` installed as real distributions; the PYTHONPATH."""
    with ExitStack() as stack:
        sites = [
            stack.enter_context(
                installed_skill(
                    tmp / "site-flaky", "flaky-skill", "flaky = flaky_skill:FlakySkill", FLAKY
                )
            ),
            stack.enter_context(
                installed_skill(
                    tmp / "site-broken",
                    "broken-skill",
                    "broken = broken_skill:Broken",
                    BROKEN_IMPORT,
                )
            ),
        ]
        yield ":".join(str(s) for s in sites)


def test_failing_skills_are_left_out_and_the_daemon_starts(tmp_path: Path) -> None:
    skills = (
        "[skills.system]\n"
        f'[skills.flaky]\nnetwork_flag = "{tmp_path / "net-up"}"\n'
        "[skills.broken]\n"
        '[skills.memos]\nmax_seconds = "lots"\n'
    )
    with third_party_skills(tmp_path) as path:
        config = write_daemon_config(tmp_path, scenario='name = "idle"\n', skills=skills)
        daemon = DaemonProcess(config, env={"PYTHONPATH": path})
        try:
            daemon.wait_for_log("daemon_started")
            status = json.loads(ctl(daemon.socket, "status", "--json"))
            listed = json.loads(ctl(daemon.socket, "skills", "--json"))["skills"]
            table = ctl(daemon.socket, "skills")
            doctor = ctl(daemon.socket, "doctor")
        finally:
            assert daemon.terminate() == 0, daemon.output()[-3000:]
    by_name = {s["name"]: s for s in listed}
    assert list(by_name) == ["system", "flaky", "broken", "memos"]  # persona order
    assert by_name["system"]["state"] == "ready"
    assert by_name["flaky"]["tools"] == []
    assert by_name["flaky"]["state"] == "failed"
    assert by_name["flaky"]["reason"] == "setup failed: the network is not up yet"
    assert by_name["broken"]["state"] == "failed" and "wifi_helper" in by_name["broken"]["reason"]
    assert by_name["memos"]["state"] == "failed"
    assert "skills.memos.max_seconds" in by_name["memos"]["reason"]
    flaky_row = next(line for line in table.splitlines() if line.strip().startswith("flaky"))
    assert "failed: setup" in flaky_row  # the reason wraps below; the JSON has it whole
    problems = status["problems"]
    assert [p.split(":")[0:2] for p in problems] == [
        ["skill", "broken"],
        ["skill", "flaky"],
        ["skill", "memos"],
    ]
    assert "retried with backoff" in problems[1]
    assert "degraded parts" in doctor and "skill:flaky: setup failed" in doctor
    assert "skill_left_out" in daemon.output()


async def test_a_failed_setup_is_retried_and_its_tools_offered_once_it_works(
    tmp_path: Path,
) -> None:
    flag = tmp_path / "net-up"
    with third_party_skills(tmp_path):
        rig = Rig(
            tmp_path,
            Scenario(turns=()),
            skills=("system", "flaky"),
            skill_config={"flaky": f'network_flag = "{flag}"'},
            skill_retry_delays_s=(0.05,),
        )
        async with rig:
            host = rig.rt.parts.host
            control = RuntimeControl(rig.rt)
            assert "flaky_ping" not in {t.name for t in host.tools}
            assert host.failed == {"flaky": "setup failed: the network is not up yet"}
            await until(lambda: "tries so far" in " ".join(rig.rt.degraded.lines()), "a retry")
            flag.write_text("")  # the Wi-Fi comes up
            await until(lambda: not host.failed, "the retry that works")
            assert "flaky_ping" in {t.name for t in host.tools}
            assert (await control.status()).problems == ()
            [flaky] = [s for s in await control.skills() if s.name == "flaky"]
            assert flaky.state == "ready" and flaky.tools == ("flaky_ping",)
            await asyncio.sleep(0)


def test_the_unit_never_ends_failed_after_crashes() -> None:
    """Only a configuration error (78, not restarted) may leave the unit down:
    any other exit is restarted, however often (no start limit to run into)."""
    unit = (ROOT / "systemd" / "huxleyd.service").read_text()
    lines = [line.strip() for line in unit.splitlines()]
    assert "Restart=on-failure" in lines or "Restart=always" in lines
    assert "RestartPreventExitStatus=78" in lines
    assert "StartLimitIntervalSec=0" in lines
    assert not any(line.startswith("StartLimitBurst=") for line in lines)


async def test_a_setup_past_its_budget_is_left_out_and_abandoned() -> None:
    from huxley_sdk import ToolDefinition
    from huxley_sdk.testing import make_test_context
    from huxleyd.skillhost.host import SkillHost

    class Hangs:
        name = "hangs"
        tools = [ToolDefinition("hang_tool", "x")]  # noqa: RUF012 - read-only
        cancelled = False

        async def setup(self, ctx: object) -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                Hangs.cancelled = True
                raise

        async def handle(self, tool_name: str, args: dict[str, object]) -> object:
            raise AssertionError("never called")

    host = SkillHost([Hangs()])  # type: ignore[list-item]
    await host.setup_all(lambda name, cfg: make_test_context(name=name), {}, budget_s=0.05)
    assert host.failed == {"hangs": "setup did not finish within 0.05 s"}
    assert host.tools == [] and host.retryable == ["hangs"]
    await until(lambda: Hangs.cancelled, "the setup is cancelled")
