"""Loading skills through entry points, and calling their tools safely.

The persona names skills; each is resolved in the ``huxley.skills``
entry-point group, instantiated, checked against the Skill protocol, and
set up with its own :class:`~huxley_sdk.SkillContext`. Everything that can be
wrong fails at start, one line each (STYLE.md rule 11).

:meth:`SkillHost.call` is the only way tools run: it parses and checks the
arguments against the tool's schema, runs ``handle`` with a timeout, and
always returns a :class:`ToolOutcome` whose ``output`` can be sent to the
model — also when the skill raised, hung, or the arguments were wrong.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from huxley_sdk import ENTRY_POINT_GROUP, Skill, SkillContext, ToolDefinition, ToolResult
from huxley_sdk.types import SideEffect
from huxleyd.argcheck import check_arguments
from huxleyd.errors import (
    SkillCollisionError,
    SkillNotInstalledError,
    SkillSetupError,
    SkillShapeError,
)
from huxleyd.logs import get_logger

log = get_logger("huxleyd.skills")

ContextFactory = Callable[[str, dict[str, Any]], SkillContext]
"""``(skill_name, skill_config) -> SkillContext``, supplied by the daemon."""


def installed_skills(group: str = ENTRY_POINT_GROUP) -> dict[str, EntryPoint]:
    """Entry points of ``group`` by name."""
    return {ep.name: ep for ep in entry_points(group=group)}


def _check_shape(name: str, found: object, where: str) -> Skill:
    problems: list[str] = []
    obj: Any = found
    # Not isinstance(obj, Skill): a runtime_checkable protocol checks every
    # member, Huxley's optional ones (prompt_context, config_schema…) included.
    missing = [m for m in ("name", "tools", "handle", "setup", "teardown") if not hasattr(obj, m)]
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    else:
        for method in ("handle", "setup", "teardown"):
            if not inspect.iscoroutinefunction(getattr(obj, method)):
                problems.append(f"{method} must be 'async def'")
        if not isinstance(obj.name, str) or not obj.name:
            problems.append(f"name must be a non-empty string, got {obj.name!r}")
        elif obj.name != name:
            problems.append(f"its name is {obj.name!r} but it is registered as {name!r}")
        tools = obj.tools
        if not isinstance(tools, list) or not all(isinstance(t, ToolDefinition) for t in tools):
            problems.append("tools must be a list of huxley_sdk.ToolDefinition")
    if problems:
        raise SkillShapeError(f"skill {name!r} ({where}) is not a Skill: {'; '.join(problems)}")
    return obj  # type: ignore[no-any-return]


def instantiate(name: str, ep: EntryPoint) -> Skill:
    """Load an entry point; a class is instantiated with no arguments."""
    try:
        target = ep.load()
    except Exception as exc:
        raise SkillShapeError(
            f"skill {name!r}: cannot import {ep.value}: {type(exc).__name__}: {exc}"
        ) from exc
    obj = target() if isinstance(target, type) else target
    return _check_shape(name, obj, ep.value)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one tool call, always sendable to the model."""

    call_id: str
    tool: str
    output: str
    side_effect: SideEffect | None = None
    error: str | None = None
    """``None`` on success; else ``invalid_arguments``, ``tool_failed``, ``timeout``, ``unknown_tool``, ``cancelled``."""

    @property
    def ok(self) -> bool:
        return self.error is None


def error_output(error: str, **details: Any) -> str:
    return json.dumps({"error": error, **details})


CANCELLED_OUTPUT = json.dumps({"cancelled": True})


class SkillHost:
    """The loaded skills of a persona, and the tool dispatcher."""

    def __init__(
        self,
        skills: Iterable[Skill],
        *,
        descriptions: Mapping[str, str] | None = None,
        tool_timeout_s: float = 8.0,
    ) -> None:
        self.skills: list[Skill] = list(skills)
        self._by_tool: dict[str, tuple[Skill, ToolDefinition]] = {}
        self._descriptions = dict(descriptions or {})
        self.tool_timeout_s = tool_timeout_s
        for skill in self.skills:
            for tool in skill.tools:
                if tool.name in self._by_tool:
                    other = self._by_tool[tool.name][0].name
                    raise SkillCollisionError(
                        f"tool {tool.name!r} is defined by both skill {other!r} and {skill.name!r}"
                    )
                self._by_tool[tool.name] = (skill, tool)
        unknown = sorted(set(self._descriptions) - set(self._by_tool))
        if unknown:
            raise SkillCollisionError(
                f"persona overrides descriptions of unknown tools: {', '.join(unknown)} "
                f"(loaded tools: {', '.join(sorted(self._by_tool))})"
            )

    @classmethod
    def load(
        cls,
        names: Iterable[str],
        *,
        installed: Mapping[str, EntryPoint] | None = None,
        descriptions: Mapping[str, str] | None = None,
        tool_timeout_s: float = 8.0,
    ) -> SkillHost:
        """Resolve and instantiate the named skills. Raises a SkillError, one line."""
        available = installed_skills() if installed is None else installed
        skills: list[Skill] = []
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise SkillCollisionError(f"skill {name!r} is listed twice")
            seen.add(name)
            ep = available.get(name)
            if ep is None:
                raise SkillNotInstalledError(
                    f"skill {name!r} is not installed (installed: {', '.join(sorted(available)) or 'none'})"
                )
            skills.append(instantiate(name, ep))
        return cls(skills, descriptions=descriptions, tool_timeout_s=tool_timeout_s)

    async def setup_all(
        self, make_context: ContextFactory, configs: Mapping[str, dict[str, Any]]
    ) -> None:
        """Run every skill's ``setup``; the first that raises stops the start."""
        for skill in self.skills:
            try:
                await skill.setup(make_context(skill.name, dict(configs.get(skill.name, {}))))
            except Exception as exc:
                # The skill's own message is for the admin; its class name is not.
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise SkillSetupError(f"skills.{skill.name}: setup failed: {reason}") from exc
            log.info("skill_ready", skill=skill.name, tools=",".join(t.name for t in skill.tools))

    async def teardown_all(self) -> None:
        """Tear down in reverse order; a failing teardown is logged, not raised."""
        for skill in reversed(self.skills):
            try:
                await asyncio.wait_for(skill.teardown(), timeout=5.0)
            except Exception:
                log.exception("skill_teardown_failed", skill=skill.name)

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools for the model, descriptions in the persona's language."""
        return [
            replace(tool, description=self._descriptions.get(name, tool.description))
            for name, (_skill, tool) in self._by_tool.items()
        ]

    def skill_of(self, tool: str) -> str | None:
        entry = self._by_tool.get(tool)
        return entry[0].name if entry else None

    async def call(self, call_id: str, tool: str, arguments_json: str) -> ToolOutcome:
        """Run one tool call. Never raises (except CancelledError); always an output."""
        entry = self._by_tool.get(tool)
        if entry is None:
            return ToolOutcome(
                call_id, tool, error_output("unknown_tool", tool=tool), error="unknown_tool"
            )
        skill, definition = entry
        try:
            args = json.loads(arguments_json or "{}")
        except ValueError as exc:
            msg = error_output("invalid_arguments", problems=[f"not JSON: {exc}"])
            return ToolOutcome(call_id, tool, msg, error="invalid_arguments")
        problems = check_arguments(args, definition.parameters)
        if problems:
            log.warning(
                "tool_invalid_arguments", tool=tool, skill=skill.name, problems="; ".join(problems)
            )
            msg = error_output("invalid_arguments", problems=problems)
            return ToolOutcome(call_id, tool, msg, error="invalid_arguments")
        try:
            # typed as ToolResult, but a skill is third-party code: check it.
            result: object = await asyncio.wait_for(
                skill.handle(tool, args), timeout=self.tool_timeout_s
            )
        except TimeoutError:
            log.error("tool_timeout", tool=tool, skill=skill.name, timeout_s=self.tool_timeout_s)
            msg = error_output(
                "timeout", message=f"{tool} did not answer within {self.tool_timeout_s:g} s"
            )
            return ToolOutcome(call_id, tool, msg, error="timeout")
        except Exception as exc:
            log.exception("tool_failed", tool=tool, skill=skill.name)
            msg = error_output("tool_failed", message=f"{type(exc).__name__}: {exc}")
            return ToolOutcome(call_id, tool, msg, error="tool_failed")
        if not isinstance(result, ToolResult):
            log.error("tool_bad_result", tool=tool, skill=skill.name, got=type(result).__name__)
            msg = error_output("tool_failed", message="the skill returned no ToolResult")
            return ToolOutcome(call_id, tool, msg, error="tool_failed")
        return ToolOutcome(call_id, tool, result.output, result.side_effect)
