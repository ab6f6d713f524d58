"""``huxleyctl skills install|remove PACKAGE``: Huxley skill packages in the daemon's venv.

The daemon's environment is the one ``huxleyctl`` runs in (``sys.prefix``;
``/opt/huxleyd/venv`` when installed). A skill package must never change
what the daemon runs on: a skill declaring ``websockets==10.0`` once
downgraded the daemon's websockets and the daemon no longer imported. So:

1. the SDK must be ours (:mod:`huxleyd.skillhost.sdkcheck`), or pip would plan
   against a foreign one;
2. the request is a name (``huxley-skill-x``, ``huxley-skill-x==0.2``); a
   URL or a path is refused unless ``allow_url`` (also for a dependency
   that pip would fetch from a URL);
3. pip plans the install (``--dry-run --report``, metadata only) against a
   constraints file pinning every installed distribution
   (:mod:`huxleyd.control.pins`). A plan that fails is planned again
   without the pins to say, in one line, which requirement would change
   which pin: the daemon's (refused) or another installed package's (a
   skill install only adds distributions);
4. wheels only (``--only-binary :all:``): building from source runs the
   package's code. With ``allow_sdist`` the sources are built into wheels
   first, as an unprivileged user when this runs as root, and only wheels
   are installed;
5. Huxley's packages declare ``requires-python >=3.13`` although they run
   on 3.11; that marker is tolerated only for pure-Python wheels
   (``*-none-any``);
6. the install is checked against a snapshot of the environment: a failed
   install is rolled back to it (uninstalling what it added), a successful
   one records what it added, and ``remove`` uninstalls exactly that (what
   another installed package still needs stays).
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huxleyd.control import pins
from huxleyd.control.requests import (
    PlannedDistribution,
    SkillPackageError,
    requested_name,
    why_refused,
)
from huxleyd.skillhost.sdkcheck import sdk_problem
from huxleyd.skillhost.sources import ENTRY_POINT_GROUP, normalize, skill_sources

__all__ = ["IndexOptions", "Outcome", "SkillPackageError", "install", "remove"]

BUILD_USER = "nobody"
"""Who builds source packages (``allow_sdist``) when huxleyctl runs as root."""


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


@dataclass(frozen=True, slots=True)
class Policy:
    """What the admin allowed beyond wheels from an index."""

    allow_sdist: bool = False
    allow_url: bool = False


def _pip(
    args: Sequence[str], *, as_builder: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run pip here; ``as_builder``: a scratch HOME, and as :data:`BUILD_USER` when root."""
    extra: dict[str, Any] = {}
    if as_builder is not None:
        extra["env"] = {**os.environ, "HOME": str(as_builder), "PIP_NO_CACHE_DIR": "1"}
        extra["cwd"] = str(as_builder)
        if os.geteuid() == 0:
            user = pwd.getpwnam(BUILD_USER)
            os.chown(as_builder, user.pw_uid, user.pw_gid)
            extra.update(user=user.pw_uid, group=user.pw_gid, extra_groups=[])
    try:
        return subprocess.run(
            [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
            capture_output=True,
            text=True,
            check=False,
            **extra,
        )
    except OSError as exc:  # e.g. the build user may not run this interpreter
        who = f" as {BUILD_USER}" if "user" in extra else ""
        raise SkillPackageError(f"cannot run pip{who}: {exc}") from exc


def _last_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (result.stderr + result.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["pip failed with no output"])[-1]


@dataclass(frozen=True, slots=True)
class _Planner:
    """The pip calls of one install, all with the same index, policy and scratch folder."""

    index: IndexOptions
    policy: Policy
    scratch: Path

    @property
    def binary_args(self) -> list[str]:
        return ["--only-binary", ":all:", "--ignore-requires-python"]

    def build_sources(self, package: str, constraints: Path) -> IndexOptions:
        """``allow_sdist``: build every package as wheels, unprivileged; they join the index."""
        home = self.scratch / "build"
        built = home / "wheels"
        built.mkdir(parents=True)
        home.chmod(0o755)
        args = ["wheel", "--wheel-dir", str(built), "--ignore-requires-python"]
        result = _pip(
            [*args, "--constraint", str(constraints), *self.index.args(), package], as_builder=home
        )
        if result.returncode != 0:
            raise SkillPackageError(f"cannot build {package} from source: {_last_error(result)}")
        return IndexOptions(
            self.index.index_url, (*self.index.find_links, str(built)), self.index.no_index
        )

    def plan(
        self, package: str, index: IndexOptions, constraints: Path | None
    ) -> tuple[list[PlannedDistribution] | None, str]:
        """pip's plan (metadata only, wheels only), or None and pip's reason."""
        report = self.scratch / ("report.json" if constraints else "report-unpinned.json")
        args = ["install", "--dry-run", "--report", str(report), *self.binary_args]
        if constraints is not None:
            args += ["--constraint", str(constraints)]
        result = _pip([*args, *index.args(), package])
        if result.returncode != 0:
            return None, _last_error(result)
        entries = json.loads(report.read_text()).get("install", [])
        return [PlannedDistribution.from_report(e) for e in entries], ""


def _refuse_failed_plan(
    package: str,
    planner: _Planner,
    index: IndexOptions,
    present: Mapping[str, pins.Installed],
    why: str,
) -> SkillPackageError:
    """The pinned plan failed: say which pin it would change, else pip's reason."""
    unpinned, _ = planner.plan(package, index, None)
    if unpinned is not None:
        reason = why_refused(package, unpinned, present, pins.daemon_needs(present))
        if reason is not None:
            return SkillPackageError(reason)
    hint = "" if planner.policy.allow_sdist else " (wheels only; --allow-sdist builds from source)"
    return SkillPackageError(f"pip cannot install {package}: {why}{hint}")


def check_plan(
    package: str,
    items: Sequence[PlannedDistribution],
    present: Mapping[str, pins.Installed],
    policy: Policy,
) -> list[str]:
    """Refuse a plan that changes an installed distribution, fetches from a URL unasked,
    or takes a native wheel past its requires-python. Returns the tolerated markers."""
    reason = why_refused(package, items, present, pins.daemon_needs(present))
    if reason is not None:
        raise SkillPackageError(reason)
    if not policy.allow_url:
        for item in items:
            if item.is_direct:
                raise SkillPackageError(
                    f"refused: {item.name} would come from {item.url}, not from the index; "
                    "--allow-url installs from a URL or a path"
                )
    tolerated: list[str] = []
    for item in items:
        if item.python_allows():
            continue
        if not item.is_pure_wheel:
            here = ".".join(map(str, sys.version_info[:2]))
            raise SkillPackageError(
                f"refused: {item.name} {item.version} requires Python {item.requires_python} "
                f"(this is {here}) and is not pure Python, so it may really need it"
            )
        tolerated.append(f"{item.name} {item.version} (requires-python {item.requires_python})")
    return tolerated


def _skills_of(distribution: str) -> list[str]:
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return []
    return sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)


def persona_lines(distribution: str, skills: Sequence[str]) -> list[str]:
    """The persona tables to add; ``from`` when another distribution has the name too."""
    sources = skill_sources()
    lines: list[str] = []
    for name in skills:
        lines.append(f"[skills.{name}]")
        if len(sources.get(name, [])) > 1:
            lines.append(f'from = "{distribution}"')
    return lines


def records_dir() -> Path:
    """Where each install records what it added (inside the daemon's venv)."""
    return Path(sys.prefix) / "huxleyd-skills"


def _rollback(before: Mapping[str, str]) -> str:
    """Uninstall what appeared since ``before``; say whether the environment is back."""
    added = sorted(set(pins.freeze(pins.installed())) - set(before))
    if added:
        _pip(["uninstall", "--yes", "--quiet", *added])
    now = pins.freeze(pins.installed())
    if now == dict(before):
        return "the environment is as before"
    changed = sorted(n for n in set(now) | set(before) if now.get(n) != before.get(n))
    return f"the environment still differs in {', '.join(changed)}: reinstall the daemon"


def _pip_install(package: str, planner: _Planner, index: IndexOptions, constraints: Path) -> None:
    before = pins.freeze(pins.installed())
    args = ["install", "--quiet", *planner.binary_args, "--constraint", str(constraints)]
    result = _pip([*args, *index.args(), package])
    if result.returncode != 0:
        state = _rollback(before)
        raise SkillPackageError(f"pip failed to install {package}: {_last_error(result)}; {state}")


def _record(name: str, version: str, added: Mapping[str, str]) -> None:
    folder = records_dir()
    folder.mkdir(mode=0o755, exist_ok=True)
    record = {"distribution": name, "version": version, "added": dict(sorted(added.items()))}
    (folder / f"{normalize(name)}.json").write_text(json.dumps(record, indent=1) + "\n")


def install(
    package: str, index: IndexOptions = IndexOptions(), policy: Policy = Policy()
) -> Outcome:
    """Install ``package`` into this interpreter's environment, as the module docstring says."""
    problem = sdk_problem()
    if problem is not None:
        raise SkillPackageError(f"{problem}; nothing was installed")
    present = pins.installed()
    name = requested_name(package, allow_url=policy.allow_url)
    if name is not None and normalize(name) in present:
        have = present[normalize(name)]
        if normalize(name) in pins.daemon_needs(present):
            raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
        raise SkillPackageError(
            f"{have.name} {have.version} is already installed; "
            f"`huxleyctl skills remove {have.name}` first"
        )
    with tempfile.TemporaryDirectory(prefix="huxleyctl-skills-") as tmp:
        planner = _Planner(index, policy, Path(tmp))
        constraints = pins.write_constraints(planner.scratch / "constraints.txt", present)
        use = planner.build_sources(package, constraints) if policy.allow_sdist else index
        items, why = planner.plan(package, use, constraints)
        if items is None:
            raise _refuse_failed_plan(package, planner, use, present, why)
        tolerated = check_plan(package, items, present, policy)
        _pip_install(package, planner, use, constraints)
    added = {n: v for n, v in pins.freeze(pins.installed()).items() if n not in present}
    top = next((i for i in items if i.requested), None)
    name = top.name if top is not None else (name or package)
    version = added.get(normalize(name), "?")
    _record(name, version, added)
    return _installed_outcome(name, version, tolerated)


def _installed_outcome(name: str, version: str, tolerated: list[str]) -> Outcome:
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


def _to_uninstall(name: str, present: Mapping[str, pins.Installed]) -> tuple[list[str], bool]:
    """What removing ``name`` uninstalls: what its install added, less what others need.

    The bool says whether the install was recorded (else only ``name`` goes)."""
    record = records_dir() / f"{normalize(name)}.json"
    if not record.is_file():
        return [normalize(name)], False
    added = {normalize(n) for n in json.loads(record.read_text()).get("added", {})}
    added.add(normalize(name))
    others = [n for n in present if n not in added]
    still_needed = pins.closure(others, present)
    return sorted(n for n in added if n in present and n not in still_needed), True


def remove(package: str) -> Outcome:
    """Uninstall ``package`` and what its install added; say which persona tables to delete."""
    name = requested_name(package, allow_url=False) or package
    present = pins.installed()
    if normalize(name) in pins.daemon_needs(present):
        raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
    have = present.get(normalize(name))
    if have is None:
        raise SkillPackageError(f"{name} is not installed in {sys.prefix}")
    skills = _skills_of(name)
    names, recorded = _to_uninstall(name, present)
    result = _pip(["uninstall", "--yes", "--quiet", *names])
    if result.returncode != 0:
        raise SkillPackageError(f"pip failed to uninstall {name}: {_last_error(result)}")
    (records_dir() / f"{normalize(name)}.json").unlink(missing_ok=True)
    outcome = Outcome(have.name, have.version, skills)
    others = [n for n in names if n != normalize(name)]
    outcome.lines.append(
        f"removed {have.name} {have.version} from {sys.prefix}"
        + (f" (and what its install added: {', '.join(others)})" if others else "")
        + ("" if recorded else " (its install was not recorded: its dependencies stay)")
    )
    if skills:
        tables = ", ".join(f"[skills.{s}]" for s in skills)
        outcome.lines.append(
            f"delete {tables} from the persona file (or the daemon runs degraded without it), "
            "then: systemctl restart huxleyd"
        )
    return outcome
