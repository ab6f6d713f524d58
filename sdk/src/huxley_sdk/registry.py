"""A minimal skill registry: tools of several skills, one dispatch.

Huxley's runtime uses this; huxleyd has its own skill host
(``huxleyd.skillhost.host``) with loading, validation and logging, and keeps
this class for skills and tests written against Huxley's SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from huxley_sdk.context import Skill, SkillContext
from huxley_sdk.contract import ToolResult


class SkillNotFoundError(Exception):
    """No registered skill offers the tool that was called."""


class SkillRegistry:
    """Skills in registration order, and which skill owns each tool name."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}
        self._owner_of_tool: dict[str, str] = {}

    def register(self, skill: Skill) -> None:
        """Add a skill; a tool name another skill already registered is a ValueError."""
        self._skills[skill.name] = skill
        for tool in skill.tools:
            owner = self._owner_of_tool.get(tool.name)
            if owner is not None:
                raise ValueError(
                    f"Tool '{tool.name}' already registered by skill '{owner}', "
                    f"cannot register it again for skill '{skill.name}'"
                )
            self._owner_of_tool[tool.name] = skill.name

    def get_all_tool_definitions(self) -> list[dict[str, Any]]:
        """Every skill's tools in the realtime APIs' function-tool shape."""
        return [tool.to_api_format() for skill in self._skills.values() for tool in skill.tools]

    async def dispatch(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        """Call the owning skill's ``handle``; SkillNotFoundError names an unknown tool."""
        owner = self._owner_of_tool.get(tool_name)
        if owner is None:
            raise SkillNotFoundError(f"No skill registered for tool '{tool_name}'")
        return await self._skills[owner].handle(tool_name, args)

    def get_prompt_context(self) -> str:
        """The non-empty ``prompt_context()`` texts, joined by blank lines."""
        parts: list[str] = []
        for skill in self._skills.values():
            contribute = getattr(skill, "prompt_context", None)
            text = contribute() if callable(contribute) else ""
            if text:
                parts.append(text)
        return "\n\n".join(parts)

    async def setup_all(self, build_context: Callable[[str], SkillContext]) -> None:
        """``setup(build_context(name))`` for each skill that has a ``setup``."""
        for name, skill in self._skills.items():
            setup = getattr(skill, "setup", None)
            if callable(setup):
                await setup(build_context(name))

    async def reconfigure_all(self, build_context: Callable[[str], SkillContext]) -> None:
        """``reconfigure(build_context(name))`` for each skill that has one."""
        for name, skill in self._skills.items():
            reconfigure = getattr(skill, "reconfigure", None)
            if callable(reconfigure):
                await reconfigure(build_context(name))

    async def teardown_all(
        self, on_error: Callable[[str, BaseException], Awaitable[None]] | None = None
    ) -> None:
        """Tear every skill down; one failing does not stop the others.

        Failures go to ``on_error(skill_name, exc)``, or are dropped without it.
        """
        for name, skill in self._skills.items():
            teardown = getattr(skill, "teardown", None)
            if not callable(teardown):
                continue
            try:
                await teardown()
            except Exception as exc:
                if on_error is not None:
                    await on_error(name, exc)

    @property
    def skill_names(self) -> list[str]:
        return list(self._skills)

    @property
    def tool_names(self) -> list[str]:
        return list(self._owner_of_tool)

    @property
    def skills(self) -> list[Skill]:
        return list(self._skills.values())


__all__ = ["SkillNotFoundError", "SkillRegistry"]
