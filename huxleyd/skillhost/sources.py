"""Which installed distribution provides each skill the persona names.

Skills are found in the ``huxley.skills`` entry-point group. Two
distributions may register the same name (our first-party ``timers`` and
Huxley's ``huxley-skill-timers``); which one Python lists last depends on
the order of ``sys.path`` and is nothing a user chose. So a collision is
never resolved silently: the persona picks one with
``[skills.NAME] from = "DISTRIBUTION"``, and without that choice the start
(and ``huxleyd --check-config``) fails, naming both distributions and the
persona file.

A collision between skills the persona does not load is no problem of
this persona and is not an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from huxleyd.errors import ConfigError, SkillCollisionError, SkillNotInstalledError

ENTRY_POINT_GROUP = "huxley.skills"
"""Huxley's group (``huxley_sdk.ENTRY_POINT_GROUP``); spelled here so that
``huxleyctl skills install`` runs before the SDK can be imported."""

SOURCE_KEY = "from"
"""The persona key (``[skills.NAME] from = "..."``) that picks a distribution."""

UNKNOWN_DISTRIBUTION = "(unknown distribution)"


def normalize(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, slots=True)
class SkillSource:
    """One registration of a skill: the entry point and its distribution."""

    name: str
    entry_point: EntryPoint
    distribution: str
    remote: bool = False
    """Found in the skills environment: it runs in a skill host process, never here."""
    config_schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    """A remote skill's ``config_schema``, as its host read it (the table is checked
    against it before the skill starts)."""

    @classmethod
    def of(cls, ep: EntryPoint) -> SkillSource:
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        return cls(ep.name, ep, dist_name or UNKNOWN_DISTRIBUTION)

    def describe(self) -> str:
        return f"{self.distribution} ({self.entry_point.value})"


Installed = Mapping[str, "EntryPoint | SkillSource | Sequence[EntryPoint | SkillSource]"]
"""Skill name → its registration(s); tests pass entry points directly."""


def skill_sources(group: str = ENTRY_POINT_GROUP) -> dict[str, list[SkillSource]]:
    """Every registration in ``group``, by skill name, sorted by distribution.

    The same distribution seen twice on ``sys.path`` (an editable install
    and a copy) counts once: it is one choice, not a collision.
    """
    found: dict[str, list[SkillSource]] = {}
    for ep in entry_points(group=group):
        source = SkillSource.of(ep)
        known = found.setdefault(ep.name, [])
        if not any(normalize(s.distribution) == normalize(source.distribution) for s in known):
            known.append(source)
    for sources in found.values():  # messages name them in an order that does not move
        sources.sort(key=lambda s: normalize(s.distribution))
    return found


def with_remote(
    local: Mapping[str, list[SkillSource]],
    remote: Mapping[str, Mapping[str, dict[str, Any] | None]],
) -> dict[str, list[SkillSource]]:
    """``local`` (the daemon's environment) and the skills environment's registrations.

    ``remote`` is skill name → {distribution: config schema}, as the skill host
    lists them; the same distribution in both counts once, the daemon's copy
    (it is one choice).
    """
    merged = {name: list(sources) for name, sources in local.items()}
    for name, dists in remote.items():
        known = merged.setdefault(name, [])
        for dist, schema in dists.items():
            if any(normalize(s.distribution) == normalize(dist) for s in known):
                continue
            ep = EntryPoint(
                name=name, value=f"{dist} (skills environment)", group=ENTRY_POINT_GROUP
            )
            known.append(SkillSource(name, ep, dist, remote=True, config_schema=schema))
        known.sort(key=lambda s: normalize(s.distribution))
    return merged


def _as_sources(installed: Installed) -> dict[str, list[SkillSource]]:
    out: dict[str, list[SkillSource]] = {}
    for name, value in installed.items():
        items = value if isinstance(value, Sequence) else [value]
        out[name] = [v if isinstance(v, SkillSource) else SkillSource.of(v) for v in items]
    return out


def pick_source(
    name: str,
    installed: Installed,
    config: Mapping[str, Any],
    *,
    persona_file: str,
) -> SkillSource:
    """The registration of skill ``name`` this persona loads. Raises a one-line error."""
    sources = _as_sources(installed)
    candidates = sources.get(name, [])
    wanted = config.get(SOURCE_KEY)
    if wanted is not None and not (isinstance(wanted, str) and wanted.strip()):
        raise ConfigError(
            persona_file,
            f"skills.{name}.{SOURCE_KEY}",
            f"expected a distribution name (e.g. 'huxley-skill-{name}'), got {wanted!r}",
        )
    if not candidates:
        listed = ", ".join(sorted(sources)) or "none"
        raise SkillNotInstalledError(
            f"skill {name!r} is not installed (installed: {listed}; "
            "a published skill is added with: huxleyctl skills install PACKAGE)"
        )
    providers = " and ".join(s.describe() for s in candidates)
    if wanted is not None:
        match = [s for s in candidates if normalize(s.distribution) == normalize(wanted)]
        if not match:
            raise ConfigError(
                persona_file,
                f"skills.{name}.{SOURCE_KEY}",
                f"distribution {wanted!r} does not provide skill {name!r} "
                f"(provided by: {providers})",
            )
        return match[0]
    if len(candidates) > 1:
        choices = " or ".join(f'from = "{s.distribution}"' for s in candidates)
        raise SkillCollisionError(
            f"{persona_file}: skill {name!r} is provided by {len(candidates)} distributions: "
            f"{providers}; pick one in [skills.{name}] with {choices}"
        )
    return candidates[0]


I18N_KEY = "i18n"


OWN_DISTRIBUTION = "huxleyd"


def storage_namespace(source: SkillSource, installed: Installed) -> str:
    """Where the skill's ``ctx.storage`` lives: its name, unless it replaces ours.

    Our ``timers`` and Huxley's both keep ``timer:<id>`` keys, in different
    shapes. When a persona picks another distribution for a name we also
    provide, its state goes to ``NAME@DISTRIBUTION`` so neither reads the
    other's; switching back finds each one's own state where it left it.
    """
    others = _as_sources(installed).get(source.name, [])
    ours = any(normalize(s.distribution) == OWN_DISTRIBUTION for s in others)
    if ours and normalize(source.distribution) != OWN_DISTRIBUTION:
        return f"{source.name}@{normalize(source.distribution)}"
    return source.name


def skill_config(raw: Mapping[str, Any], language: str | None = None) -> dict[str, Any]:
    """A persona's ``[skills.NAME]`` table as the skill sees it.

    Without ``from``; and, as Huxley resolves a persona, without the
    ``i18n`` table, whose ``[skills.NAME.i18n.<language>]`` keys are merged
    (shallowly) over the others for the persona's language.
    """
    config = {k: v for k, v in raw.items() if k not in (SOURCE_KEY, I18N_KEY)}
    overrides = raw.get(I18N_KEY)
    if language is not None and isinstance(overrides, Mapping):
        chosen = overrides.get(language)
        if isinstance(chosen, Mapping):
            config.update(chosen)
    return config
