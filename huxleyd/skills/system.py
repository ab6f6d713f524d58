"""The system skill: the time, and the speaker volume.

First-party, but written only against ``huxley_sdk`` like any skill.
The volume is the device's, not this skill's: ``set_volume`` asks for a
change with the ``SetVolume`` side effect, and ``get_volume`` reads the
level in effect through ``ctx.speaker_volume()`` (the daemon's volume
part), so it reports the number the speaker has, however it was set.
What the change really did (another level, not saved) the daemon adds to
``set_volume``'s answer under ``speaker`` (``huxleyd.turns.effects``); the
tool's description asks the model to say it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from huxley_sdk import SetVolume, SkillContext, ToolDefinition, ToolResult

NO_SPEAKER = "this runtime does not report the speaker's volume"


class SystemSkill:
    """Tells the time in the persona's time zone; sets and reports the volume."""

    name = "system"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"timezone": {"type": "string", "minLength": 1}},
        "additionalProperties": False,
    }
    """``[skills.system]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(self) -> None:
        self._ctx: SkillContext | None = None
        self._tz = ZoneInfo("UTC")

    @property
    def tools(self) -> list[ToolDefinition]:
        return [
            ToolDefinition(
                name="get_current_time",
                description="Get the current local date and time.",
                parameters={"type": "object", "properties": {}},
            ),
            ToolDefinition(
                name="set_volume",
                description=(
                    "Set the speaker volume from 0 (silent) to 100 (max). For relative "
                    "changes (louder, quieter) call get_volume first and move by about 10. "
                    "If the answer has a speaker part, the speaker did not do just that: "
                    "tell the user its note."
                ),
                parameters={
                    "type": "object",
                    "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 100}},
                    "required": ["level"],
                    "additionalProperties": False,
                },
            ),
            ToolDefinition(
                name="get_volume",
                description="Get the current speaker volume, 0 to 100.",
                parameters={"type": "object", "properties": {}},
            ),
        ]

    async def setup(self, ctx: SkillContext) -> None:
        self._ctx = ctx
        self._tz = ZoneInfo(str(ctx.config.get("timezone", ctx.timezone)))

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        if tool_name == "get_current_time":
            now = datetime.now(self._tz)
            return ToolResult(
                output=json.dumps(
                    {
                        "time": now.strftime("%H:%M"),
                        "date": now.strftime("%A %d %B %Y"),
                        "timezone": str(self._tz),
                    }
                )
            )
        if tool_name == "set_volume":
            level = max(0, min(100, int(args["level"])))
            return ToolResult(output=json.dumps({"volume": level}), side_effect=SetVolume(level))
        if tool_name == "get_volume":
            return ToolResult(output=json.dumps(await self._volume()))
        raise ValueError(f"system skill has no tool {tool_name!r}")

    async def _volume(self) -> dict[str, Any]:
        assert self._ctx is not None, "setup() was not called"
        level = await self._ctx.speaker_volume()
        return {"volume": level} if level is not None else {"volume": None, "error": NO_SPEAKER}

    async def teardown(self) -> None:
        self._ctx = None
