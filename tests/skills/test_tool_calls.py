"""Every tool call gets an output: success, bad arguments, raising, hanging."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from huxley_sdk import Skill, SkillContext, ToolDefinition, ToolResult
from huxleyd.skillhost.host import SkillHost


class Moody(Skill):
    """A skill whose tools misbehave on purpose."""

    name = "moody"

    def __init__(self) -> None:
        self.handled: list[tuple[str, dict[str, Any]]] = []

    @property
    def tools(self) -> list[ToolDefinition]:
        level = {"type": "integer", "minimum": 0, "maximum": 100}
        return [
            ToolDefinition(
                "set_level",
                "x",
                {"type": "object", "properties": {"level": level}, "required": ["level"]},
            ),
            ToolDefinition("explode", "x"),
            ToolDefinition("hang", "x"),
            ToolDefinition("wrong_return", "x"),
            ToolDefinition(
                "pick",
                "x",
                {
                    "type": "object",
                    "properties": {
                        "colour": {"enum": ["red", "blue"]},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
            ),
        ]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.handled.append((tool_name, args))
        if tool_name == "explode":
            raise KeyError("battery", args)
        if tool_name == "hang":
            await asyncio.sleep(3600)
        if tool_name == "wrong_return":
            return "not a result"  # type: ignore[return-value]
        return ToolResult(json.dumps({"ok": True, **args}))

    async def setup(self, ctx: SkillContext) -> None:
        pass

    async def teardown(self) -> None:
        pass


def host(timeout_s: float = 0.2) -> tuple[SkillHost, Moody]:
    skill = Moody()
    return SkillHost([skill], tool_timeout_s=timeout_s), skill


async def test_valid_call() -> None:
    h, skill = host()
    outcome = await h.call("c1", "set_level", '{"level": 40}')
    assert outcome.ok and json.loads(outcome.output) == {"ok": True, "level": 40}
    assert skill.handled == [("set_level", {"level": 40})]


async def test_invalid_arguments_never_reach_the_skill() -> None:
    h, skill = host()
    cases = {
        '{"level": 140}': "above the maximum 100",
        '{"level": "40"}': "expected integer",
        "{}": "arguments.level: required argument missing",
        "[1]": "expected a JSON object",
        "{not json": "not JSON",
    }
    for arguments, problem in cases.items():
        outcome = await h.call("c", "set_level", arguments)
        assert outcome.error == "invalid_arguments", arguments
        assert problem in outcome.output, (arguments, outcome.output)
    outcome = await h.call("c", "pick", '{"colour": "green", "size": 3, "tags": [1]}')
    payload = json.loads(outcome.output)
    assert payload["error"] == "invalid_arguments"
    assert any("colour" in p for p in payload["problems"])
    assert any("size: unknown argument" in p for p in payload["problems"])
    assert any("tags[0]" in p for p in payload["problems"])
    assert skill.handled == []


async def test_a_raising_skill_gives_the_model_its_class_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The exception's text and the call's arguments may be private: journal only."""
    h, _ = host()
    with caplog.at_level(logging.ERROR, logger="huxleyd.skills"):
        outcome = await h.call("c", "explode", '{"pin": "4711"}')
    assert outcome.error == "tool_failed"
    assert json.loads(outcome.output) == {"error": "tool_failed", "exception": "KeyError"}
    assert "battery" not in outcome.output and "4711" not in outcome.output
    (record,) = [r for r in caplog.records if r.getMessage().startswith("tool_failed")]
    assert "battery" in record.getMessage() and "4711" in record.getMessage()


async def test_a_hanging_skill_times_out() -> None:
    h, _ = host(timeout_s=0.05)
    outcome = await h.call("c", "hang", "")
    assert outcome.error == "timeout" and json.loads(outcome.output)["error"] == "timeout"


async def test_unknown_tool_and_bad_result() -> None:
    h, _ = host()
    assert (await h.call("c", "fly", "{}")).error == "unknown_tool"
    assert (await h.call("c", "wrong_return", "{}")).error == "tool_failed"
