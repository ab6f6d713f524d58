"""Finding a skill and checking it: its entry point, its shape, its persona table.

What :class:`~huxleyd.skillhost.host.SkillHost` does with a skill once it is
loaded is there; here is everything that decides whether a skill can load
at all, so ``--check-config`` and the start ask the same functions.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from importlib.metadata import EntryPoint
from typing import Any, cast

from huxley_sdk import ENTRY_POINT_GROUP, Skill, ToolDefinition
from huxleyd.errors import ConfigError, SkillShapeError
from huxleyd.skillhost.argcheck import check_value
from huxleyd.skillhost.sources import SkillSource, skill_sources


def installed_skills(group: str = ENTRY_POINT_GROUP) -> dict[str, list[SkillSource]]:
    """Every registration of ``group`` by skill name (more than one = a collision)."""
    return skill_sources(group)


REQUIRED = ("name", "tools", "handle")
OPTIONAL_ASYNC = ("setup", "reconfigure", "teardown")
"""Huxley documents these as optional with no-op defaults."""


def _check_shape(name: str, found: object, where: str) -> Skill:
    problems: list[str] = []
    obj: Any = found
    # Not isinstance(obj, Skill): a runtime_checkable protocol checks every
    # member, Huxley's optional ones (prompt_context, config_schema…) included.
    missing = [m for m in REQUIRED if not hasattr(obj, m)]
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    else:
        for method in ("handle", *OPTIONAL_ASYNC):
            fn = getattr(obj, method, None)
            if fn is not None and not inspect.iscoroutinefunction(fn):
                problems.append(f"{method} must be 'async def'")
        context = getattr(obj, "prompt_context", None)
        if context is not None and not callable(context):
            problems.append("prompt_context must be a method returning a string")
        obj = cast(Skill, obj)
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
    try:
        obj = target() if isinstance(target, type) else target
    except Exception as exc:
        raise SkillShapeError(
            f"skill {name!r}: {ep.value}() failed: {type(exc).__name__}: {exc}"
        ) from exc
    return _check_shape(name, obj, ep.value)


def load_source(source: SkillSource) -> Skill:
    """The skill of ``source``: instantiated here, or a proxy of its host process (its
    ``config_schema`` as the host read it, so its table is checked before it starts)."""
    if source.remote:
        from huxleyd.skillhost.remote import RemoteSkill

        def check(skill: Skill, config: dict[str, Any]) -> None:
            check_config(skill, config, persona_file="persona")

        remote = RemoteSkill(source.name, source.distribution, config_check=check)
        remote.config_schema = source.config_schema
        return cast(Skill, remote)
    return instantiate(source.name, source.entry_point)


def check_config(skill: Skill, config: Mapping[str, Any], *, persona_file: str) -> None:
    """Check a skill's persona table against its ``config_schema`` (when it has one).

    Huxley's schemas are JSON Schema describing ``ctx.config``; the subset
    :mod:`huxleyd.skillhost.argcheck` knows is what such tables use. An unknown key is
    named first with the keys the skill knows. Raises ConfigError naming the
    persona file and the key (``skills.memos.max_seconds``).
    """
    schema = getattr(skill, "config_schema", None)
    if schema is None:
        return
    if not isinstance(schema, dict):
        raise SkillShapeError(
            f"{persona_file}: skills.{skill.name}: the skill's config_schema must be a "
            f"JSON Schema dict, got {type(schema).__name__}"
        )
    properties = schema.get("properties")
    if schema.get("additionalProperties") is False and isinstance(properties, dict):
        for key in config:
            if key not in properties:
                known = ", ".join(sorted(properties)) or "no keys"
                raise ConfigError(
                    persona_file,
                    f"skills.{skill.name}.{key}",
                    f"unknown key (expected one of: {known})",
                )
    problems = check_value(dict(config), schema, f"skills.{skill.name}")
    if problems:
        where, _, problem = problems[0].partition(": ")
        raise ConfigError(persona_file, where, problem)
