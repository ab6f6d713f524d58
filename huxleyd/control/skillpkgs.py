"""``huxleyctl skills install|remove PACKAGE``: Huxley skill packages in the daemon's venv.

The daemon's environment is the one ``huxleyctl`` runs in (``sys.prefix``;
``/opt/huxleyd/venv`` when installed). Installing a skill there must never
replace our ``huxley-sdk`` (a skill requires ``huxley-sdk>=0.1.1,<0.2``, and
pip would otherwise happily fetch Huxley's from PyPI, whose ``huxley_sdk``
shadows ours and stops the daemon). So:

1. pip resolves the package with a constraint pinning the installed
   ``huxley-sdk`` version (``pip install --dry-run --report``); a package
   that needs another ``huxley-sdk`` is refused with pip's reason;
2. Huxley's packages declare ``requires-python >=3.13`` although they run
   on 3.11; that marker is tolerated (``--ignore-requires-python``) only
   when every distribution in the plan is pure Python: a ``*-none-any``
   wheel, or an sdist without C, Cython, Rust or Fortran sources. Anything
   native is refused, since it may really need the newer Python;
3. the plan must not touch ``huxley-sdk`` or ``huxleyd``; then pip installs
   with the same constraint, and the ``huxley-sdk`` version is checked
   again afterwards;
4. the answer says which skills the package registers and what to add to
   the persona (with ``from = ...`` when the name collides with another
   installed skill).

``remove`` uninstalls the package (not its dependencies) and says which
persona tables to delete.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.skillsources import ENTRY_POINT_GROUP, normalize, skill_sources

SDK_DISTRIBUTION = "huxley-sdk"
PROTECTED = frozenset({SDK_DISTRIBUTION, "huxleyd"})
"""Distributions a skill install must never add, replace or remove."""

NATIVE_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".pxd", ".rs", ".f", ".f90", ".go", ".m")
NATIVE_MARKERS = ("Cargo.toml", "meson.build", "CMakeLists.txt")


class SkillPackageError(Exception):
    """The install or removal was refused or failed; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class PlannedDistribution:
    """One distribution pip would install."""

    name: str
    version: str
    url: str
    requires_python: str | None

    @property
    def is_wheel(self) -> bool:
        return self.url.endswith(".whl")


@dataclass(slots=True)
class Outcome:
    """What was done, for the admin."""

    package: str
    version: str
    skills: list[str] = field(default_factory=list)
    tolerated_python: list[str] = field(default_factory=list)
    """Pure-Python distributions installed despite their requires-python."""
    lines: list[str] = field(default_factory=list)


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


def _pip(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _last_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (result.stderr + result.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["pip failed with no output"])[-1]


def installed_version(name: str) -> str | None:
    importlib.invalidate_caches()
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _python_allows(requires_python: str | None) -> bool:
    """Whether this interpreter satisfies ``requires_python`` (unknown: assume not)."""
    if not requires_python:
        return True
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:  # no parser here: treat every marker as one to tolerate
        return False
    try:
        return SpecifierSet(requires_python).contains(
            ".".join(map(str, sys.version_info[:3])), prereleases=True
        )
    except InvalidSpecifier:
        return False


def _sdist_is_pure(path: Path) -> bool:
    names: list[str]
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    else:
        with tarfile.open(path) as tf:
            names = tf.getnames()
    for name in names:
        base = name.rsplit("/", 1)[-1]
        if base.endswith(NATIVE_SOURCES) or base in NATIVE_MARKERS:
            return False
    return True


def _is_pure(item: PlannedDistribution, index: IndexOptions, scratch: Path) -> bool:
    if item.is_wheel:
        return item.url.rsplit("/", 1)[-1].endswith("-none-any.whl")
    target = scratch / normalize(item.name)
    result = _pip(
        [
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--ignore-requires-python",
            "--dest",
            str(target),
            *index.args(),
            f"{item.name}=={item.version}",
        ]
    )
    files = list(target.glob("*")) if target.exists() else []
    if result.returncode != 0 or not files:
        raise SkillPackageError(
            f"cannot fetch the sdist of {item.name} {item.version} to check it is pure Python: "
            f"{_last_error(result)}"
        )
    return _sdist_is_pure(files[0])


def plan(
    package: str, index: IndexOptions, scratch: Path, sdk_version: str
) -> list[PlannedDistribution]:
    """What ``pip install package`` would install, with huxley-sdk pinned. Refuses a conflict."""
    constraints = scratch / "constraints.txt"
    constraints.write_text(f"{SDK_DISTRIBUTION}=={sdk_version}\n")
    report = scratch / "report.json"
    result = _pip(
        [
            "install",
            "--dry-run",
            "--report",
            str(report),
            "--ignore-requires-python",
            "--constraint",
            str(constraints),
            *index.args(),
            package,
        ]
    )
    if result.returncode != 0:
        why = _last_error(result)
        wants_sdk = [
            ln.strip()
            for ln in (result.stdout + result.stderr).splitlines()
            if "depends on " + SDK_DISTRIBUTION in ln
        ]
        if wants_sdk:
            raise SkillPackageError(
                f"refused: {package} needs a {SDK_DISTRIBUTION} other than the daemon's "
                f"({sdk_version}), so installing it would replace ours: {wants_sdk[0]}"
            )
        raise SkillPackageError(f"pip cannot install {package}: {why}")
    items: list[PlannedDistribution] = []
    for entry in json.loads(report.read_text()).get("install", []):
        meta = entry.get("metadata", {})
        items.append(
            PlannedDistribution(
                name=str(meta.get("name", "?")),
                version=str(meta.get("version", "?")),
                url=str(entry.get("download_info", {}).get("url", "")),
                requires_python=meta.get("requires_python"),
            )
        )
    return items


def check_plan(
    package: str, items: Sequence[PlannedDistribution], index: IndexOptions, scratch: Path
) -> list[str]:
    """Refuse what would touch the daemon or a native package past its requires-python.

    Returns the distributions whose requires-python is tolerated."""
    for item in items:
        if normalize(item.name) in PROTECTED:
            raise SkillPackageError(
                f"refused: installing {package} would replace {item.name} "
                f"(with {item.version}); the daemon's own must stay"
            )
    tolerated: list[str] = []
    for item in items:
        if _python_allows(item.requires_python):
            continue
        if not _is_pure(item, index, scratch):
            here = ".".join(map(str, sys.version_info[:2]))
            raise SkillPackageError(
                f"refused: {item.name} {item.version} requires Python {item.requires_python} "
                f"(this is {here}) and is not pure Python, so it may really need it"
            )
        tolerated.append(f"{item.name} {item.version} (requires-python {item.requires_python})")
    return tolerated


def _skills_of(distribution: str) -> list[str]:
    importlib.invalidate_caches()
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return []
    return sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)


def _requirement_name(package: str) -> str:
    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)", package)
    if match is None:
        raise SkillPackageError(
            f"expected a package name (e.g. huxley-skill-reminders), got {package!r}"
        )
    return match.group(1)


def persona_lines(distribution: str, skills: Sequence[str]) -> list[str]:
    """The persona tables to add; ``from`` when another distribution has the name too."""
    sources = skill_sources()
    lines: list[str] = []
    for name in skills:
        lines.append(f"[skills.{name}]")
        if len(sources.get(name, [])) > 1:
            lines.append(f'from = "{distribution}"')
    return lines


def install(package: str, index: IndexOptions = IndexOptions()) -> Outcome:
    """Install ``package`` into this interpreter's environment, as the module docstring says."""
    name = _requirement_name(package)
    if normalize(name) in PROTECTED:
        raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
    sdk_version = installed_version(SDK_DISTRIBUTION)
    if sdk_version is None:
        raise SkillPackageError(
            f"{SDK_DISTRIBUTION} is not installed in {sys.prefix}; run `make install` "
            f"(or `make setup`) first, or pip would fetch Huxley's and replace ours"
        )
    with tempfile.TemporaryDirectory(prefix="huxleyctl-skills-") as tmp:
        scratch = Path(tmp)
        items = plan(package, index, scratch, sdk_version)
        tolerated = check_plan(package, items, index, scratch)
        args = ["install", "--quiet", "--constraint", str(scratch / "constraints.txt")]
        if tolerated:
            args.append("--ignore-requires-python")
        result = _pip([*args, *index.args(), package])
        if result.returncode != 0:
            raise SkillPackageError(f"pip failed to install {package}: {_last_error(result)}")
    after = installed_version(SDK_DISTRIBUTION)
    if after != sdk_version:
        raise SkillPackageError(
            f"{SDK_DISTRIBUTION} changed from {sdk_version} to {after} during the install; "
            "reinstall the daemon (make install) before restarting it"
        )
    version = installed_version(name) or "?"
    skills = _skills_of(name)
    outcome = Outcome(name, version, skills, tolerated)
    outcome.lines.append(
        f"installed {name} {version} into {sys.prefix}"
        + (f" (skills: {', '.join(skills)})" if skills else " (it registers no skill)")
    )
    for item in tolerated:
        outcome.lines.append(f"  pure Python, installed despite its marker: {item}")
    if skills:
        outcome.lines.append("add to the persona file, then restart: systemctl restart huxleyd")
        outcome.lines.extend(f"  {line}" for line in persona_lines(name, skills))
    return outcome


def remove(package: str) -> Outcome:
    """Uninstall ``package`` (its dependencies stay); say which persona tables to delete."""
    name = _requirement_name(package)
    if normalize(name) in PROTECTED:
        raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
    version = installed_version(name)
    if version is None:
        raise SkillPackageError(f"{name} is not installed in {sys.prefix}")
    skills = _skills_of(name)
    result = _pip(["uninstall", "--yes", "--quiet", name])
    if result.returncode != 0:
        raise SkillPackageError(f"pip failed to uninstall {name}: {_last_error(result)}")
    outcome = Outcome(name, version, skills)
    outcome.lines.append(f"removed {name} {version} from {sys.prefix}")
    if skills:
        tables = ", ".join(f"[skills.{s}]" for s in skills)
        outcome.lines.append(
            f"delete {tables} from the persona file (or the daemon will not start), "
            "then: systemctl restart huxleyd"
        )
    return outcome
