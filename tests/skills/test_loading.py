"""Skill loading: entry points, shape checks, collisions, setup failures,
and a skill from a distribution outside this repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, ClassVar

import pytest

from huxley_sdk import SkillContext, ToolDefinition, ToolResult
from huxley_sdk.testing import make_test_context
from huxleyd.errors import (
    SkillCollisionError,
    SkillNotInstalledError,
    SkillShapeError,
)
from huxleyd.skillhost.host import SkillHost
from huxleyd.skillhost.loading import installed_skills
from huxleyd.storage.db import Database, FileSecrets
from tests.fakes.distributions import installed_skill

ROOT = Path(__file__).resolve().parents[2]

EXTERNAL_SKILL = '''
"""A third-party skill, written only against huxley_sdk."""
import json
from huxley_sdk import ToolDefinition, ToolResult

class WeatherSkill:
    name = "weather"

    @property
    def tools(self):
        return [ToolDefinition(
            name="get_weather",
            description="Get the weather for a city.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]},
        )]

    async def setup(self, ctx):
        self._ctx = ctx
        await ctx.storage.set_setting("setup_ran", "yes")

    async def handle(self, tool_name, args):
        calls = int(await self._ctx.storage.get_setting("calls", "0")) + 1
        await self._ctx.storage.set_setting("calls", str(calls))
        return ToolResult(output=json.dumps({"city": args["city"], "sky": "clear", "calls": calls}))

    async def teardown(self):
        pass
'''


@pytest.fixture
def external_distribution(tmp_path: Path) -> Iterator[Path]:
    """A distribution with its own ``huxley.skills`` entry point, on sys.path."""
    with installed_skill(
        tmp_path / "site",
        "huxley-skill-weather",
        "weather = weather_skill:WeatherSkill",
        EXTERNAL_SKILL,
    ) as site:
        yield site


async def test_an_external_skill_is_found_set_up_and_called(
    external_distribution: Path, tmp_path: Path
) -> None:
    assert "weather" in installed_skills()
    host = SkillHost.load(["system", "weather"])
    db = await Database.open(tmp_path / "p.db")
    try:

        def make(name: str, config: dict[str, Any]) -> SkillContext:
            base = make_test_context(name=name, config=config)
            return SkillContext(
                logger=base.logger,
                storage=db.skill_storage(name),
                secrets=FileSecrets(tmp_path / "secrets", name),
                persona_data_dir=tmp_path,
                config=config,
            )

        await host.setup_all(make, {})
        assert [t.name for t in host.tools] == [
            "get_current_time",
            "set_volume",
            "get_volume",
            "get_weather",
        ]
        outcome = await host.call("c1", "get_weather", '{"city": "Lyon"}')
        assert outcome.ok and json.loads(outcome.output)["city"] == "Lyon"
        assert await db.skill_storage("weather").get_setting("setup_ran") == "yes"
        assert await db.skill_storage("system").get_setting("setup_ran") is None
    finally:
        await host.teardown_all()
        await db.close()


def test_the_daemon_finds_an_external_skill(external_distribution: Path, tmp_path: Path) -> None:
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "default.toml").write_text(
        'name = "t"\n[skills.system]\n[skills.weather]\n'
    )
    root = Path(__file__).resolve().parents[2]
    # --check-config checks what the start would open: the sounds, the boards, the socket's folder.
    (tmp_path / "huxleyd.toml").write_text(
        f'[daemon]\nsounds_dir = "{root / "sounds"}"\n[hardware]\nboards_dir = "{root / "hw"}"\n'
        '[control]\nsocket_path = "control.sock"\n'
    )
    env = {**os.environ, "PYTHONPATH": str(external_distribution)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "huxleyd",
            "--check-config",
            "--config",
            str(tmp_path / "huxleyd.toml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "weather" in result.stdout


def ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group="huxley.skills")


# Test doubles resolved through real EntryPoint objects pointing at this module.
class NoTeardown:
    name = "broken"
    tools: ClassVar[list[ToolDefinition]] = []

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult("")

    async def setup(self, ctx: SkillContext) -> None:
        pass


class SyncHandle(NoTeardown):
    def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:  # type: ignore[override]
        return ToolResult("")

    async def teardown(self) -> None:
        pass


class Clock:
    name = "clock"

    @property
    def tools(self) -> list[ToolDefinition]:
        return [ToolDefinition("get_current_time", "clash with system")]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult("")

    async def setup(self, ctx: SkillContext) -> None:
        raise RuntimeError("no network")

    async def teardown(self) -> None:
        pass


class Failing(Clock):
    name = "failing"

    @property
    def tools(self) -> list[ToolDefinition]:
        return [ToolDefinition("fail_now", "x")]


HERE = __name__


def test_missing_skill_lists_what_is_installed() -> None:
    with pytest.raises(SkillNotInstalledError) as info:
        SkillHost.load(
            ["radio"], installed={"system": ep("system", "huxleyd.skills.system:SystemSkill")}
        )
    assert str(info.value) == (
        "skill 'radio' is not installed (installed: system; "
        "a published skill is added with: huxleyctl skills install PACKAGE)"
    )


class NoHandle:
    name = "broken"
    tools: ClassVar[list[ToolDefinition]] = []


def test_wrong_shape_names_the_skill_and_what_is_missing() -> None:
    with pytest.raises(SkillShapeError) as info:
        SkillHost.load(["broken"], installed={"broken": ep("broken", f"{HERE}:NoHandle")})
    assert "skill 'broken'" in str(info.value) and "missing handle" in str(info.value)


class Minimal:
    """Only what Huxley requires: name, tools, handle (setup and teardown are optional)."""

    name = "minimal"
    tools: ClassVar[list[ToolDefinition]] = [ToolDefinition("ping", "Ping.")]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult('{"pong": true}')


async def test_a_skill_without_setup_and_teardown_loads_and_runs() -> None:
    host = SkillHost.load(["minimal"], installed={"minimal": ep("minimal", f"{HERE}:Minimal")})
    await host.setup_all(lambda name, cfg: make_test_context(name=name), {})
    outcome = await host.call("c1", "ping", "{}")
    assert outcome.ok and outcome.output == '{"pong": true}'
    assert host.prompt_context() == ""
    await host.teardown_all()


async def test_a_skill_without_teardown_loads() -> None:
    host = SkillHost.load(["broken"], installed={"broken": ep("broken", f"{HERE}:NoTeardown")})
    await host.setup_all(lambda name, cfg: make_test_context(name=name), {})
    await host.teardown_all()


def test_sync_handle_is_a_wrong_shape() -> None:
    with pytest.raises(SkillShapeError, match="handle must be 'async def'"):
        SkillHost.load(["broken"], installed={"broken": ep("broken", f"{HERE}:SyncHandle")})


def test_registered_name_must_match() -> None:
    with pytest.raises(SkillShapeError, match="its name is 'clock' but it is registered as 'tick'"):
        SkillHost.load(["tick"], installed={"tick": ep("tick", f"{HERE}:Clock")})


def test_unimportable_entry_point() -> None:
    with pytest.raises(SkillShapeError, match=r"cannot import nowhere\.at_all:Skill"):
        SkillHost.load(["x"], installed={"x": ep("x", "nowhere.at_all:Skill")})


def test_tool_name_collision_names_both_skills() -> None:
    installed = {
        "system": ep("system", "huxleyd.skills.system:SystemSkill"),
        "clock": ep("clock", f"{HERE}:Clock"),
    }
    with pytest.raises(SkillCollisionError) as info:
        SkillHost.load(["system", "clock"], installed=installed)
    assert "'get_current_time' is defined by both skill 'system' and 'clock'" in str(info.value)


def test_skill_listed_twice() -> None:
    installed = {"system": ep("system", "huxleyd.skills.system:SystemSkill")}
    with pytest.raises(SkillCollisionError, match="listed twice"):
        SkillHost.load(["system", "system"], installed=installed)


def test_description_override_for_an_unknown_tool() -> None:
    installed = {"system": ep("system", "huxleyd.skills.system:SystemSkill")}
    with pytest.raises(SkillCollisionError, match="unknown tools: get_wether"):
        SkillHost.load(["system"], installed=installed, descriptions={"get_wether": "x"})


async def test_a_setup_that_raises_leaves_the_skill_out_with_why() -> None:
    installed = {
        "failing": ep("failing", f"{HERE}:Failing"),
        "system": ep("system", "huxleyd.skills.system:SystemSkill"),
    }
    host = SkillHost.load(["failing", "system"], installed=installed)
    await host.setup_all(lambda name, cfg: make_test_context(name=name), {})
    assert host.failed == {"failing": "setup failed: no network"}  # no class name
    assert [s.name for s in host.skills] == ["system"]
    assert "fail_now" not in {t.name for t in host.tools}  # none of its tools is offered
    assert host.retryable == ["failing"]


def test_persona_language_sets_tool_descriptions() -> None:
    installed = {"system": ep("system", "huxleyd.skills.system:SystemSkill")}
    host = SkillHost.load(
        ["system"], installed=installed, descriptions={"get_volume": "Obtén el volumen."}
    )
    by_name = {t.name: t.description for t in host.tools}
    assert by_name["get_volume"] == "Obtén el volumen."
    assert by_name["get_current_time"] == "Get the current local date and time."


def test_the_shipped_entry_points_resolve() -> None:
    assert "system" in installed_skills()
