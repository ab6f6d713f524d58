"""What SIGHUP reads, all of it before anything is applied.

Layer: wiring (reads files; no asyncio). :func:`read_for_reload` parses
``huxleyd.toml``, the persona and the board profile as the start does
(:func:`~huxleyd.config.load.load_config`), checks every loaded skill's new table
against its schema, and returns a :class:`ReloadPlan`; any error, whatever
the bytes or the nesting of a file, raises :class:`~huxleyd.errors.ConfigError`
and nothing of the running configuration changes. The runtime then applies
the plan (:meth:`~huxleyd.app.runtime.Runtime.reload`).

What a reload can apply: the persona (instructions, voice, skills' tables),
:data:`LIVE_KEYS` of ``huxleyd.toml``. Every other changed key is named in
:attr:`ReloadPlan.needs_restart`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from huxleyd.config.load import Config, Persona, load_config, load_persona
from huxleyd.errors import ConfigError
from huxleyd.skillhost.host import SkillHost
from huxleyd.skillhost.loading import check_config
from huxleyd.skillhost.sources import SOURCE_KEY, skill_config

LIVE_KEYS = frozenset({"daemon.log_level", "provider.tool_timeout_s", "provider.voice"})
"""Keys of ``huxleyd.toml`` a reload applies to the running daemon."""

NOT_COMPARED = frozenset({"path", "persona", "persona_path"})
"""Config fields that are not ``huxleyd.toml`` keys (the persona is compared apart)."""


@dataclass(frozen=True, slots=True)
class ReloadPlan:
    config: Config
    """The configuration to run: the new one, with the running persona's skills
    limited to those loaded (see :attr:`configs`)."""
    configs: dict[str, dict[str, Any]]
    """Each loaded skill's new table (checked against its schema)."""
    applied: list[str]
    """Changed ``huxleyd.toml`` keys the reload applies."""
    needs_restart: list[str]
    """Changed keys (``huxleyd.toml``, skills added, removed or moved) that only a
    restart applies."""


def changed_keys(old: Config, new: Config) -> list[str]:
    """``section.key`` of every ``huxleyd.toml`` value (board included) that differs."""
    keys: list[str] = []
    for fld in dataclasses.fields(old):
        if fld.name in NOT_COMPARED:
            continue
        before, after = getattr(old, fld.name), getattr(new, fld.name)
        if before == after:
            continue
        if dataclasses.is_dataclass(before) and not isinstance(before, type):
            keys.extend(
                f"{fld.name}.{f.name}"
                for f in dataclasses.fields(before)
                if getattr(before, f.name) != getattr(after, f.name, None)
            )
        else:
            keys.append(fld.name)
    return keys


def read_for_reload(running: Config, host: SkillHost) -> ReloadPlan:
    """Read and check everything SIGHUP applies; raise ConfigError on any problem."""
    new = load_config(running.path)
    changed = changed_keys(running, new)
    if new.daemon.persona != running.daemon.persona:
        # Another persona is another database and other skills: a restart.
        new = dataclasses.replace(
            new, persona=load_persona(running.persona_path), persona_path=running.persona_path
        )
    persona = new.persona
    old = running.persona
    loaded = [s.name for s in host.skills]
    configs = {n: persona.skills.get(n, old.skills.get(n, {})) for n in loaded}
    file = str(running.persona_path)
    for skill in host.skills:  # every table checked before any skill sees one
        check_config(skill, skill_config(configs[skill.name], persona.language), persona_file=file)
    restart = [k for k in changed if k not in LIVE_KEYS]
    restart += _skill_changes(host.order, persona, old)
    # A skill left out keeps its running table: its fix is a restart, named here.
    left_out = {n: old.skills.get(n, {}) for n in host.failed}
    restart += [
        f"skills.{n}"
        for n, table in left_out.items()
        if n in persona.skills and persona.skills[n] != table and f"skills.{n}" not in restart
    ]
    tables = {
        n: configs[n] if n in configs else left_out[n] for n in host.order if n in persona.skills
    }
    return ReloadPlan(
        config=dataclasses.replace(new, persona=dataclasses.replace(persona, skills=tables)),
        configs=configs,
        applied=[k for k in changed if k in LIVE_KEYS],
        needs_restart=restart,
    )


def _skill_changes(order: Sequence[str], persona: Persona, old: Persona) -> list[str]:
    """``skills.NAME`` of each skill added, removed, or loaded from elsewhere (``from``)."""
    names = set(order) | set(persona.skills)
    return [
        f"skills.{n}"
        for n in sorted(names)
        if (n in persona.skills) != (n in order)
        or (
            n in persona.skills
            and persona.skills[n].get(SOURCE_KEY) != old.skills.get(n, {}).get(SOURCE_KEY)
        )
    ]


def refusal(exc: BaseException) -> str:
    """One line for a reload that failed where it should not (a bug, not a file)."""
    if isinstance(exc, ConfigError):
        return str(exc)
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
