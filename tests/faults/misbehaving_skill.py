"""A misbehaving skill for the fault suite: imported in-process, and installed
as a real distribution (this very file) for daemon processes.

``stubborn`` swallows every ``CancelledError`` and runs on for ``run_for_s``
seconds (bounded in real time, so even code that waits for it ends);
``slow`` declares a long budget and answers once ``release`` is set.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from huxley_sdk import SkillContext, ToolDefinition, ToolResult

log = logging.getLogger("huxley.skill.misbehaving")


class MisbehavingSkill:
    name = "misbehaving"

    def __init__(self, run_for_s: float = 3600.0) -> None:
        self.run_for_s = run_for_s
        self.release = asyncio.Event()
        self.started = 0
        self.finished = 0
        self.cancels_swallowed = 0

    @property
    def tools(self) -> list[ToolDefinition]:
        return [
            ToolDefinition("stubborn", "Never lets go."),
            ToolDefinition("slow", "Takes its time, within its budget."),
        ]

    tool_timeouts_s = {"slow": 30.0}  # noqa: RUF012 - read-only
    """``slow`` declares a budget longer than the host's default."""

    async def setup(self, ctx: SkillContext) -> None:
        pass

    async def teardown(self) -> None:
        pass

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.started += 1
        log.warning("misbehaving_started tool=%s", tool_name)
        if tool_name == "slow":
            await self.release.wait()
            return ToolResult(json.dumps({"slow": "done"}))
        loop = asyncio.get_running_loop()
        end = loop.time() + self.run_for_s
        while loop.time() < end:
            try:
                await asyncio.sleep(min(0.05, max(0.0, end - loop.time())))
            except asyncio.CancelledError:
                self.cancels_swallowed += 1  # and carry on: the fault under test
        self.finished += 1
        return ToolResult(json.dumps({"stubborn": "finally"}))
