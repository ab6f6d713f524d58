"""The daemon's environment as pins: what a skill install may not change.

A skill install is planned against a constraints file (``pip install
--constraint``) that pins every distribution installed in the daemon's
environment to its installed version, the way Home Assistant keeps an
integration from changing its core packages. Pinning all of them, not only
the daemon's, makes an install purely additive, so that undoing it (a failed
install, ``skills remove``) is uninstalling what it added.

:func:`daemon_needs` says which of the pins are the daemon's own: the
closure of ``huxleyd``'s and ``huxley-sdk``'s requirements. Those are named
in a refusal as the daemon's pin.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from huxleyd.skillhost.sources import normalize

DAEMON_ROOTS = ("huxleyd", "huxley-sdk")
"""The daemon's own distributions; everything they require (transitively) is the daemon's."""


@dataclass(frozen=True, slots=True)
class Installed:
    """One installed distribution."""

    name: str
    version: str
    requires: tuple[str, ...]


def installed(path: Sequence[str] | None = None) -> dict[str, Installed]:
    """Every distribution on this interpreter's path (or on ``path``: the skills
    environment's site-packages), by normalized name (first one wins, as for imports)."""
    importlib.invalidate_caches()
    found: dict[str, Installed] = {}
    dists = metadata.distributions() if path is None else metadata.distributions(path=list(path))
    for dist in dists:
        name = dist.metadata["Name"]
        if not name or normalize(name) in found:
            continue
        found[normalize(name)] = Installed(name, dist.version, tuple(dist.requires or ()))
    return found


def _requirement_names(requires: Iterable[str], present: Mapping[str, Installed]) -> set[str]:
    """Names of the requirements that apply here.

    An extra's requirement counts when its distribution is installed: the
    extra was asked for (``huxleyd[journal]`` brings systemd-python)."""
    names: set[str] = set()
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = normalize(req.name)
        marker = req.marker
        applies = marker is None or marker.evaluate({"extra": ""})
        if applies or ("extra" in str(marker) and name in present):
            names.add(name)
    return names


def closure(roots: Iterable[str], present: Mapping[str, Installed]) -> set[str]:
    """``roots`` and everything installed they require, transitively (normalized names)."""
    todo = [normalize(r) for r in roots if normalize(r) in present]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(n for n in _requirement_names(present[name].requires, present) if n in present)
    return seen


def daemon_needs(present: Mapping[str, Installed]) -> set[str]:
    """The distributions the daemon itself needs (normalized names)."""
    return closure(DAEMON_ROOTS, present)


def write_constraints(path: Path, present: Mapping[str, Installed]) -> Path:
    """Pin every installed distribution to its version (pip's constraints format)."""
    lines = [f"{d.name}=={d.version}" for _, d in sorted(present.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def freeze(present: Mapping[str, Installed]) -> dict[str, str]:
    """Normalized name → version: what an install may only add to."""
    return {name: d.version for name, d in present.items()}
