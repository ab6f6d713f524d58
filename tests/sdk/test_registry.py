"""Huxley's minimal skill registry: one owner per tool, one dispatch, every
skill torn down even when one fails."""

from __future__ import annotations

from typing import Any, cast

import pytest

from huxley_sdk import Skill, SkillContext, ToolDefinition, ToolResult
from huxley_sdk.registry import SkillNotFoundError, SkillRegistry


class Echo:
    """A skill with the optional hooks, recording what the registry called."""

    def __init__(self, name: str, tools: list[str], *, prompt: str = "", fail: bool = False):
        self.name = name
        self._tools = tools
        self._prompt = prompt
        self._fail = fail
        self.calls: list[tuple[str, Any]] = []

    @property
    def tools(self) -> list[ToolDefinition]:
        return [ToolDefinition(t, f"{t} of {self.name}") for t in self._tools]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append((tool_name, args))
        return ToolResult(f"{self.name}:{tool_name}")

    def prompt_context(self) -> str:
        return self._prompt

    async def setup(self, ctx: SkillContext) -> None:
        self.calls.append(("setup", ctx))

    async def reconfigure(self, ctx: SkillContext) -> None:
        self.calls.append(("reconfigure", ctx))

    async def teardown(self) -> None:
        self.calls.append(("teardown", None))
        if self._fail:
            raise RuntimeError(f"{self.name} broke")


def register(registry: SkillRegistry, *skills: object) -> None:
    """Shape-only skills (no base class, no ``config_schema``), as Huxley's may be."""
    for skill in skills:
        registry.register(cast(Skill, skill))


class Bare:
    """Only what the protocol requires: no setup, prompt or teardown."""

    name = "bare"

    @property
    def tools(self) -> list[ToolDefinition]:
        return []

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        raise AssertionError("no tools")


async def test_dispatch_goes_to_the_owner_and_names_an_unknown_tool() -> None:
    registry = SkillRegistry()
    clock, radio = Echo("clock", ["get_time"]), Echo("radio", ["play", "stop"])
    register(registry, clock, radio)
    assert await registry.dispatch("stop", {"x": 1}) == ToolResult("radio:stop")
    assert radio.calls == [("stop", {"x": 1})] and clock.calls == []
    with pytest.raises(SkillNotFoundError, match="'nope'"):
        await registry.dispatch("nope", {})
    assert registry.skill_names == ["clock", "radio"]
    assert registry.tool_names == ["get_time", "play", "stop"]
    assert [d["name"] for d in registry.get_all_tool_definitions()] == ["get_time", "play", "stop"]
    assert registry.get_all_tool_definitions()[0]["type"] == "function"


def test_a_tool_name_taken_by_another_skill_is_refused_naming_both() -> None:
    registry = SkillRegistry()
    register(registry, Echo("radio", ["play"]))
    with pytest.raises(ValueError, match=r"'play' already registered by skill 'radio'.*'music'"):
        register(registry, Echo("music", ["play"]))


async def test_prompt_context_joins_the_non_empty_texts() -> None:
    registry = SkillRegistry()
    register(
        registry, Echo("a", [], prompt="A knows"), Echo("b", []), Echo("c", [], prompt="C too")
    )
    register(registry, Bare())
    assert registry.get_prompt_context() == "A knows\n\nC too"


async def test_setup_and_reconfigure_get_each_skill_its_own_context() -> None:
    registry = SkillRegistry()
    a, b = Echo("a", []), Echo("b", [])
    register(registry, a, Bare(), b)
    contexts = {
        f"{kind}-{name}": cast(SkillContext, object()) for kind in ("ctx", "re") for name in "ab"
    }
    await registry.setup_all(lambda name: contexts[f"ctx-{name}"])
    await registry.reconfigure_all(lambda name: contexts[f"re-{name}"])
    assert a.calls == [("setup", contexts["ctx-a"]), ("reconfigure", contexts["re-a"])]
    assert b.calls == [("setup", contexts["ctx-b"]), ("reconfigure", contexts["re-b"])]


async def test_teardown_goes_on_past_a_failing_skill_and_reports_it() -> None:
    registry = SkillRegistry()
    a, broken, c = Echo("a", []), Echo("broken", [], fail=True), Echo("c", [])
    register(registry, a, broken, Bare(), c)
    errors: list[tuple[str, str]] = []

    async def on_error(name: str, exc: BaseException) -> None:
        errors.append((name, str(exc)))

    await registry.teardown_all(on_error)
    assert [s.calls for s in (a, broken, c)] == [[("teardown", None)]] * 3
    assert errors == [("broken", "broken broke")]
    await registry.teardown_all()  # without a handler the failure is dropped, not raised


@pytest.mark.xfail(
    strict=True,
    reason="register() adds the skill, and its tools before the clash, before it "
    "raises: a refused skill stays half-registered (listed, set up, dispatched)",
)
async def test_a_refused_skill_leaves_the_registry_as_it_was() -> None:
    registry = SkillRegistry()
    radio = Echo("radio", ["play"])
    register(registry, radio)
    music = Echo("music", ["shuffle", "play"])
    with pytest.raises(ValueError):
        register(registry, music)
    assert registry.skill_names == ["radio"]
    assert registry.tool_names == ["play"]
    with pytest.raises(SkillNotFoundError):
        await registry.dispatch("shuffle", {})
