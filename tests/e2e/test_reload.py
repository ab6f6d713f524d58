"""SIGHUP's reload and client events on the running daemon: changed skill config goes to the
skill (``reconfigure``), new instructions go to the provider, a broken
persona file changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import Rig, scenario_skill_installed, until
from tests.fakes.distributions import installed_skill


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def updates(rig: Rig) -> list[dict[str, Any]]:
    return [e for e in rig.sim.raw if e.get("type") == "session.update"]


async def test_reload_reconfigures_what_changed_and_resends_instructions(tmp_path: Path) -> None:
    skills = ("system", "memos")
    async with Rig(
        tmp_path, Scenario(), skills=skills, skill_config={"memos": "max_seconds = 5"}
    ) as rig:
        await until(lambda: updates(rig), "the session is configured")
        before = len(updates(rig))
        persona = tmp_path / "personas" / "default.toml"
        text = persona.read_text()
        persona.write_text(
            text.replace("max_seconds = 5", "max_seconds = 7").replace("Be brief.", "Be kind.")
        )
        assert await rig.rt.reload() == ["memos"]
        await until(lambda: len(updates(rig)) > before, "the new instructions are sent")
        assert updates(rig)[-1]["session"]["instructions"] == "Be kind."
        assert rig.rt.config.persona.skills["memos"] == {"max_seconds": 7}

        assert await rig.rt.reload() == []  # nothing changed: nobody is reconfigured
        persona.write_text("this is not = = toml")
        assert await rig.rt.reload() == []
        assert rig.rt.config.persona.instructions == "Be kind."


DOORBELL = """
from huxley_sdk import ToolDefinition, ToolResult

class DoorbellSkill:
    name = "doorbell"
    tools = [ToolDefinition(name="ring_count", description="How often it rang.")]

    def __init__(self):
        self.rings = []

    async def setup(self, ctx):
        self.ctx = ctx
        ctx.subscribe_client_event("doorbell.ring", self.on_ring)

    async def on_ring(self, data):
        self.rings.append(data)
        await self.ctx.emit_server_event("doorbell.heard", {"count": len(self.rings)})

    async def handle(self, tool_name, args):
        return ToolResult(output=str(len(self.rings)))
"""


async def test_huxleyctl_event_reaches_a_skill_and_its_answer_is_logged(tmp_path: Path) -> None:
    with installed_skill(
        tmp_path / "doorbell-site",
        "doorbell-skill",
        "doorbell = doorbell_skill:DoorbellSkill",
        DOORBELL,
    ):
        async with Rig(tmp_path, Scenario(), skills=("system", "doorbell")) as rig:
            control = RuntimeControl(rig.rt)
            assert await control.client_event("doorbell.ring", {"door": "front"}) == ["doorbell"]
            assert rig.skill("doorbell").rings == [{"door": "front"}]
            assert rig.rt.client_events.emitted == [("doorbell", "doorbell.heard", {"count": 1})]
            assert await control.client_event("nobody.listens", {}) == []
