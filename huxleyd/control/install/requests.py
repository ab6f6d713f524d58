"""What a skill install asks for and what pip plans: the checks, without running pip.

:func:`requested_name` reads the admin's request (a name, or a URL/path
when allowed); :class:`PlannedDistribution` is one entry of pip's
installation report; :func:`why_refused` says, in one line, which
requirement of a plan would change which installed distribution.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from huxleyd.control.install.pins import Installed
from huxleyd.skillhost.sources import normalize

ARCHIVES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """Where pip looks (passed through): a mirror, a local directory, offline."""

    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def args(self) -> list[str]:
        out: list[str] = []
        if self.index_url:
            out += ["--index-url", self.index_url]
        for link in self.find_links:
            out += ["--find-links", link]
        if self.no_index:
            out.append("--no-index")
        return out

    def also(self, folder: Path) -> IndexOptions:
        return IndexOptions(self.index_url, (*self.find_links, str(folder)), self.no_index)


def last_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (result.stderr + result.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["pip failed with no output"])[-1]


class SkillPackageError(Exception):
    """The install or removal was refused or failed; the message says why, in one line."""


def requested_name(package: str, *, allow_url: bool) -> str | None:
    """The distribution name asked for; None for a URL/path (known only once planned).

    Raises for a URL or a path unless ``allow_url``, and for anything else
    that is not a requirement."""
    try:
        req = Requirement(package)
    except InvalidRequirement:
        looks_like_path = "/" in package or package.startswith(".") or package.endswith(ARCHIVES)
        if not looks_like_path:
            raise SkillPackageError(
                f"expected a package name (e.g. huxley-skill-reminders), got {package!r}"
            ) from None
        if not allow_url:
            raise SkillPackageError(
                f"refused: {package!r} is a path or a URL, not a name on the index; "
                "--allow-url installs from one"
            ) from None
        return None
    if req.url and not allow_url:
        raise SkillPackageError(
            f"refused: {package!r} names a URL ({req.url}), not the index; "
            "--allow-url installs from one"
        )
    return req.name


@dataclass(frozen=True, slots=True)
class PlannedDistribution:
    """One distribution pip would install (an ``install`` entry of ``pip --report``)."""

    name: str
    version: str
    url: str
    requires_python: str | None = None
    requires: tuple[str, ...] = ()
    is_direct: bool = False
    """Fetched from a URL or a path given in a requirement, not found on the index."""
    requested: bool = False
    """The admin asked for this one (not a dependency)."""
    sha256: str | None = None
    """The archive's hash, as the index or the file gave it to pip."""

    @classmethod
    def from_report(cls, entry: Mapping[str, Any]) -> PlannedDistribution:
        meta = entry.get("metadata", {})
        return cls(
            name=str(meta.get("name", "?")),
            version=str(meta.get("version", "?")),
            url=str(entry.get("download_info", {}).get("url", "")),
            requires_python=meta.get("requires_python"),
            requires=tuple(meta.get("requires_dist", ()) or ()),
            is_direct=bool(entry.get("is_direct", False)),
            requested=bool(entry.get("requested", False)),
            sha256=_archive_sha256(entry),
        )

    @property
    def is_pure_wheel(self) -> bool:
        return self.url.rsplit("/", 1)[-1].endswith("-none-any.whl")

    def python_allows(self) -> bool:
        """Whether this interpreter satisfies ``requires_python`` (unparseable: no)."""
        if not self.requires_python:
            return True
        try:
            return SpecifierSet(self.requires_python).contains(
                ".".join(map(str, sys.version_info[:3])), prereleases=True
            )
        except InvalidSpecifier:
            return False


def _archive_sha256(entry: Mapping[str, Any]) -> str | None:
    archive = entry.get("download_info", {}).get("archive_info", {})
    hashes = archive.get("hashes") or {}
    if "sha256" in hashes:
        return str(hashes["sha256"])
    algorithm, _, value = str(archive.get("hash", "")).partition("=")
    return value if algorithm == "sha256" and value else None


def _requirement_on(
    name: str, items: Sequence[PlannedDistribution]
) -> tuple[PlannedDistribution, str] | None:
    """The first planned distribution requiring ``name``, and its requirement line."""
    for item in items:
        for line in item.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if normalize(req.name) == name:
                return item, line
    return None


def why_refused(
    package: str,
    items: Sequence[PlannedDistribution],
    present: Mapping[str, Installed],
    daemon: set[str],
) -> str | None:
    """One line when the plan adds a new version of an installed distribution, else None."""
    for item in items:
        key = normalize(item.name)
        have = present.get(key)
        if have is None or have.version == item.version:
            continue
        pin = f"{have.name}=={have.version}"
        found = _requirement_on(key, items)
        if found is None:
            asked = f"{package} would replace {have.name} with {item.version}"
        else:
            who, line = found
            through = "" if who.requested else f" (through {who.name} {who.version})"
            asked = f'{package}{through} requires "{line}"'
        if key in daemon:
            return f"refused: {asked}, but the skills environment's base pins {pin}"
        return (
            f"refused: {asked}, but {pin} is installed and a skill install only adds "
            "distributions (remove what needs it first)"
        )
    return None
