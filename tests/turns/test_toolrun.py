"""ToolRunner: calls run at once, concurrently, and each gets exactly one answer."""

from __future__ import annotations

import asyncio
import json

from huxley_sdk import ToolResult
from huxleyd.providers.events import ToolCall
from huxleyd.skillhost.host import CANCELLED_OUTPUT, SkillHost, ToolOutcome
from huxleyd.turns.toolrun import ToolRunner
from tests.fakes.turn_ports import GatedSkill
from tests.turns import settle


def runner() -> tuple[ToolRunner, GatedSkill, list[ToolOutcome]]:
    skill = GatedSkill("info", "slow", "boom")
    skill.results["info"] = ToolResult('{"time": "10:00"}')
    skill.results["boom"] = RuntimeError("skill bug")
    skill.gates["slow"] = asyncio.Event()
    return ToolRunner(SkillHost([skill], tool_timeout_s=60.0)), skill, []


def running(tools: ToolRunner) -> bool:
    """Read fresh (mypy keeps an earlier assert's narrowing of the property)."""
    return tools.running


def call(call_id: str, name: str) -> ToolCall:
    return ToolCall("r1", call_id, name, "{}")


async def test_a_call_runs_at_once_and_its_outcome_is_reported() -> None:
    tools, _, done = runner()
    tools.start(call("c1", "info"), on_done=done.append)
    assert tools.known("c1") and running(tools)
    await settle()
    assert [(o.call_id, o.output) for o in done] == [("c1", '{"time": "10:00"}')]
    assert tools.done(("c1",)) and not running(tools)
    assert tools.outcome("c1") == done[0]


async def test_calls_run_concurrently() -> None:
    tools, skill, done = runner()
    tools.start(call("c1", "slow"), on_done=done.append)
    tools.start(call("c2", "info"), on_done=done.append)
    await settle()
    assert [o.call_id for o in done] == ["c2"]  # not queued behind the slow one
    assert not tools.done(("c1", "c2"))
    skill.gates["slow"].set()
    await settle()
    assert tools.done(("c1", "c2"))


async def test_a_duplicate_call_id_is_ignored() -> None:
    tools, skill, done = runner()
    tools.start(call("c1", "info"), on_done=done.append)
    tools.start(call("c1", "info"), on_done=done.append)
    await settle()
    tools.start(call("c1", "info"), on_done=done.append)  # also once it is done
    await settle()
    assert skill.calls == ["info"]
    assert len(done) == 1


async def test_a_failing_tool_still_has_an_outcome() -> None:
    tools, _, done = runner()
    tools.start(call("c1", "boom"), on_done=done.append)
    await settle()
    assert done[0].error == "tool_failed"
    assert json.loads(done[0].output)["error"] == "tool_failed"


async def test_unanswered_cancels_what_runs_and_lists_each_call_once() -> None:
    tools, _, done = runner()
    tools.start(call("c1", "info"), on_done=done.append)
    tools.start(call("c2", "slow"), on_done=done.append)
    await settle()
    owed = {o.call_id: o.output for o in tools.unanswered()}
    assert owed == {"c1": '{"time": "10:00"}', "c2": CANCELLED_OUTPUT}
    assert not running(tools)
    await settle()
    assert [o.call_id for o in done] == ["c1"]  # a cancelled call is not reported as done
    assert tools.mark_answered("c1") and tools.mark_answered("c2")
    assert not tools.mark_answered("c1")  # one output per call
    assert tools.unanswered() == []


async def test_reset_forgets_the_turn_so_an_id_may_come_again() -> None:
    tools, skill, done = runner()
    tools.start(call("c1", "info"), on_done=done.append)
    await settle()
    tools.mark_answered("c1")
    tools.reset()
    assert not tools.known("c1")
    tools.start(call("c1", "info"), on_done=done.append)  # a new turn's call
    await settle()
    assert skill.calls == ["info", "info"]


async def test_a_call_cancelled_after_it_finished_but_before_it_reported_stays_cancelled() -> None:
    # A barge-in can land between a tool's last step and its done callback: the
    # call is then answered "cancelled", so its result (and its side effect,
    # which on_done starts) must not follow.
    tools, _, done = runner()
    errors: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    tools.start(call("c1", "info"), on_done=done.append)
    task = tools._tasks["c1"]
    # One loop step at a time: stop exactly between the task's end and its callback.
    while not task.done():  # noqa: ASYNC110
        await asyncio.sleep(0)
    cancelled = tools.cancel_all()
    await settle()
    assert [(o.tool, o.output, o.error) for o in cancelled] == [
        ("info", CANCELLED_OUTPUT, "cancelled")
    ]
    assert done == []
    assert tools.outcome("c1") == cancelled[0]
    assert errors == []  # the late done callback ran cleanly


class RaisingHost(SkillHost):
    """A host whose call raises, which SkillHost.call itself never does."""

    async def call(self, call_id: str, tool: str, arguments_json: str) -> ToolOutcome:
        raise RuntimeError("host bug")


async def test_a_host_that_raises_still_gives_the_call_a_tool_failed_outcome() -> None:
    _, skill, done = runner()
    tools = ToolRunner(RaisingHost([skill], tool_timeout_s=60.0))
    tools.start(call("c1", "info"), on_done=done.append)
    await settle()
    assert [(o.call_id, o.tool, o.error) for o in done] == [("c1", "info", "tool_failed")]
    assert json.loads(done[0].output) == {"error": "tool_failed"}
    assert tools.outcome("c1") == done[0]


class RecordingHost(SkillHost):
    """Records what the runner hands the host."""

    seen: list[tuple[str, str, str]]

    async def call(self, call_id: str, tool: str, arguments_json: str) -> ToolOutcome:
        self.seen.append((call_id, tool, arguments_json))
        return ToolOutcome(call_id, tool, "{}")


async def test_the_call_reaches_the_host_with_its_id_name_and_arguments() -> None:
    _, skill, done = runner()
    host = RecordingHost([skill], tool_timeout_s=60.0)
    host.seen = []
    tools = ToolRunner(host)
    tools.start(ToolCall("r1", "c1", "info", '{"city": "Oslo"}'), on_done=done.append)
    await settle()
    assert host.seen == [("c1", "info", '{"city": "Oslo"}')]
