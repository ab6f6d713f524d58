"""``huxleyctl skills install|remove PACKAGE``: Huxley skill packages in the skills environment.

Skills go into an environment of their own (:mod:`huxleyd.skillhost.skillenv`,
made by :mod:`huxleyd.control.install.skillsbase`), managed by its own pip
(``<env>/bin/python -m pip``), never the daemon's: nothing a skill installs
is on the path of ``huxleyd``, ``huxleyctl``, pip or any root process. An
install:

1. plans with the skills environment's pip (``--dry-run --report``, wheels
   only, metadata only; as the unprivileged build user when root, since pip
   builds a source package named by a URL even then) against a constraints
   file pinning every distribution installed there
   (:mod:`huxleyd.control.install.pins`): an install only adds distributions. A URL or a path needs ``allow_url``; a source
   package needs ``allow_sdist`` (:mod:`huxleyd.control.install.skillbuild` builds
   it, unprivileged);
2. fetches the planned wheels, checks each against the hash pip's report
   gives, and reads each one's RECORD (:mod:`huxleyd.control.install.wheelcheck`):
   a ``.pth``, a script, a data file, another distribution's file, a
   console script or a first-party skill's name is refused, in one line,
   before anything is written;
3. installs exactly those files (``--no-deps --no-index``) and compares a
   sha256 of every file of the environment before and after
   (:mod:`huxleyd.control.install.envfiles`): only new files may appear. A failed
   install is undone file by file, and the message says "as before" only
   when every hash matches again.

``remove`` uninstalls the package and what its install added that no other
installed skill needs, and checks that only their files went.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from huxleyd.control.install import envfiles, pins, skillsbase
from huxleyd.control.install.requests import (
    IndexOptions,
    PlannedDistribution,
    SkillPackageError,
    last_error,
    requested_name,
    why_refused,
)
from huxleyd.control.install.skillbuild import Builder, build_wheels, unprivileged
from huxleyd.control.install.wheelcheck import DAEMON_PACKAGES, WheelRefused, check_all, read_wheel
from huxleyd.skillhost.sdkcheck import sdk_problem
from huxleyd.skillhost.skillenv import SkillsEnv, skills_env
from huxleyd.skillhost.sources import ENTRY_POINT_GROUP, normalize

__all__ = ["IndexOptions", "Outcome", "Policy", "SkillPackageError", "install", "remove"]

DAEMON_DISTRIBUTIONS = frozenset({"huxleyd", "huxley-sdk"})


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
class Policy:
    """What the admin allowed beyond wheels from an index."""

    allow_sdist: bool = False
    allow_url: bool = False
    allow_names: tuple[str, ...] = ()
    """First-party skill names a package may register too (``--allow-name``)."""


BINARY_ARGS = ("--only-binary", ":all:", "--ignore-requires-python")


def _plan(
    builder: Builder, request: str, index: IndexOptions, constraints: Path | None
) -> tuple[list[PlannedDistribution] | None, str]:
    """pip's plan (metadata only, wheels only), or None and pip's reason.

    Run unprivileged: pip builds a source package given as a URL (the request's
    or a dependency's) to read its metadata, ``--only-binary`` or not."""
    report = builder.folder / "plan" / ("report.json" if constraints else "report-unpinned.json")
    args = ["install", "--dry-run", "--report", str(report), *BINARY_ARGS]
    if constraints is not None:
        args += ["--constraint", str(constraints)]
    result = builder.pip([*args, *index.args(), request])
    if result.returncode != 0:
        return None, last_error(result)
    entries = json.loads(report.read_text()).get("install", [])
    return [PlannedDistribution.from_report(e) for e in entries], ""


def check_plan(
    package: str,
    items: Sequence[PlannedDistribution],
    present: Mapping[str, pins.Installed],
    base: set[str],
    policy: Policy,
) -> list[str]:
    """Refuse a plan that changes an installed distribution, fetches from a URL unasked,
    names the daemon, or takes a native wheel past its requires-python. Returns the
    tolerated markers."""
    reason = why_refused(package, items, present, base)
    if reason is not None:
        raise SkillPackageError(reason)
    for item in items:
        if normalize(item.name) in DAEMON_DISTRIBUTIONS:
            raise SkillPackageError(
                f"refused: {package} would install {item.name} {item.version}, "
                "which is the daemon's own distribution"
            )
        if item.is_direct and not policy.allow_url:
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


def _fetch(env: SkillsEnv, items: Sequence[PlannedDistribution], into: Path) -> list[Path]:
    """The planned wheels as files of our own, each checked against the report's hash."""
    into.mkdir()
    wheels: list[Path] = []
    for item in items:
        parsed = urllib.parse.urlparse(item.url)
        name = urllib.parse.unquote(parsed.path.rsplit("/", 1)[-1])
        if not name.endswith(".whl"):
            raise SkillPackageError(f"refused: {item.name} {item.version} is not a wheel ({name})")
        target = into / name
        if parsed.scheme == "file":
            shutil.copyfile(urllib.request.url2pathname(parsed.path), target)
        else:
            got = skillsbase.env_pip(
                env,
                ["download", "--quiet", "--no-deps", "-d", str(into), f"{item.name} @ {item.url}"],
            )
            if got.returncode != 0 or not target.is_file():
                raise SkillPackageError(f"cannot download {item.url}: {last_error(got)}")
        if item.sha256 is not None and envfiles.sha256_of(target) != item.sha256:
            raise SkillPackageError(
                f"refused: {name} does not have the sha256 the index gave ({item.sha256})"
            )
        wheels.append(target)
    return wheels


def first_party_skills() -> dict[str, str]:
    """Skill name → the daemon's distribution that registers it (in the daemon's env)."""
    out: dict[str, str] = {}
    for dist_name in sorted(DAEMON_DISTRIBUTIONS):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP:
                out.setdefault(ep.name, dist.metadata["Name"] or dist_name)
    return out


def _check_request(name: str | None, env: SkillsEnv, present: Mapping[str, pins.Installed]) -> None:
    if name is None:
        return
    key = normalize(name)
    if key in DAEMON_DISTRIBUTIONS or key.replace("-", "_") in DAEMON_PACKAGES:
        raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
    if key in skillsbase.base_distributions(env):
        raise SkillPackageError(
            f"refused: {name} is part of the skills environment's base (huxley-sdk needs it), "
            "not a skill package"
        )
    if key in present:
        have = present[key]
        raise SkillPackageError(
            f"{have.name} {have.version} is already installed; "
            f"`huxleyctl skills remove {have.name}` first"
        )


def install(
    package: str,
    index: IndexOptions | None = None,
    policy: Policy = Policy(),
    env: SkillsEnv | None = None,
) -> Outcome:
    """Install ``package`` into the skills environment, as the module docstring says."""
    env = env or skills_env()
    index = index or IndexOptions()
    name = _requested(package, policy)
    created = skillsbase.ensure(env)
    broken = skillsbase.sdk_problem(env)
    if broken is not None:
        raise SkillPackageError(f"{broken}; repair: huxleyctl skills repair; nothing was installed")
    present = pins.installed([str(env.site_packages)])
    _check_request(name, env, present)
    base = set(skillsbase.base_distributions(env))
    with (
        tempfile.TemporaryDirectory(prefix="huxleyctl-skills-") as tmp,
        unprivileged(env) as builder,
    ):
        scratch = Path(tmp)
        constraints = pins.write_constraints(builder.folder / "constraints.txt", present)
        if not policy.allow_sdist and _is_source(package):
            raise SkillPackageError(
                f"refused: {package} is a source package (wheels only; --allow-sdist builds "
                "it, unprivileged)"
            )
        request, use = builder_copies(builder, package, index)
        if policy.allow_sdist:
            request, built = build_wheels(builder, request, use, present)
            use = use.also(built)
        items, why = _plan(builder, request, use, constraints)
        if items is None:
            raise _failed_plan(builder, package, request, use, present, base, policy, why)
        tolerated = check_plan(package, items, present, base, policy)
        wheels = _fetch(env, items, scratch / "wheels")
        _check_wheels(env, wheels, policy)
        added = _install_files(env, package, wheels)
    present_after = pins.installed([str(env.site_packages)])
    new = {n: d.version for n, d in present_after.items() if n not in present}
    top = next((i for i in items if i.requested), None)
    name = top.name if top is not None else (name or package)
    version = new.get(normalize(name), "?")
    _record(env, name, version, new, added)
    outcome = _installed_outcome(env, name, version, tolerated)
    outcome.lines[:0] = created
    return outcome


def _requested(package: str, policy: Policy) -> str | None:
    """The distribution ``package`` names (None for a path or URL), after the
    refusals that need nothing installed: a foreign SDK, a part of the daemon."""
    problem = sdk_problem()
    if problem is not None:
        raise SkillPackageError(f"{problem}; nothing was installed")
    name = requested_name(package, allow_url=policy.allow_url)
    if name is not None and normalize(name) in DAEMON_DISTRIBUTIONS:
        raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
    return name


def _check_wheels(env: SkillsEnv, wheels: list[Path], policy: Policy) -> None:
    """Refuse the whole install when any wheel's files or skills may not go in
    (:func:`check_all`), before one file is written."""
    try:
        facts = [read_wheel(w) for w in wheels]
        check_all(
            facts,
            envfiles.owners(env.site_packages),
            first_party=first_party_skills(),
            allowed_names=policy.allow_names,
        )
    except WheelRefused as exc:
        raise SkillPackageError(f"{exc}; nothing was installed") from None


ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")


def builder_copies(builder: Builder, package: str, index: IndexOptions) -> tuple[str, IndexOptions]:
    """The request and the index with local files copied where the build user can read them
    (the admin's home is not theirs to enter): a path or ``file://`` request, and the
    archives of each local ``--find-links`` folder. The copies are root's, read-only."""
    links: list[str] = []
    for i, link in enumerate(index.find_links):
        folder = Path(link)
        if "://" in link or not folder.is_dir():
            links.append(link)
            continue
        copy = builder.folder / "links" / str(i)
        copy.mkdir(mode=0o755, parents=True)
        for item in folder.iterdir():
            if item.is_file() and item.name.endswith(ARCHIVE_SUFFIXES):
                shutil.copyfile(item, copy / item.name)
        links.append(str(copy))
    use = IndexOptions(index.index_url, tuple(links), index.no_index)
    try:
        req: Requirement | None = Requirement(package)
        where = req.url if req is not None else None
    except InvalidRequirement:
        req, where = None, package
    if not where:
        return package, use
    local = (
        Path(urllib.request.url2pathname(where[len("file://") :]))
        if where.startswith("file://")
        else Path(where)
    )
    if ("://" in where and not where.startswith("file://")) or not local.is_file():
        return package, use
    into = builder.folder / "request"
    into.mkdir(mode=0o755, exist_ok=True)
    shutil.copyfile(local, into / local.name)
    copied = str(into / local.name)
    return (f"{req.name} @ {Path(copied).as_uri()}" if req is not None else copied), use


def _is_source(package: str) -> bool:
    """A request naming a path or URL that is not a wheel (a source archive or folder)."""
    try:
        where = Requirement(package).url
    except InvalidRequirement:
        where = package
    if not where:
        return False
    return not where.split("#", 1)[0].split("?", 1)[0].endswith(".whl")


def _failed_plan(
    builder: Builder,
    package: str,
    request: str,
    index: IndexOptions,
    present: Mapping[str, pins.Installed],
    base: set[str],
    policy: Policy,
    why: str,
) -> SkillPackageError:
    """The pinned plan failed: say which pin it would change, else pip's reason."""
    unpinned, _ = _plan(builder, request, index, None)
    if unpinned is not None:
        reason = why_refused(package, unpinned, present, base)
        if reason is not None:
            return SkillPackageError(reason)
    hint = "" if policy.allow_sdist else " (wheels only; --allow-sdist builds from source)"
    return SkillPackageError(f"pip cannot install {package}: {why}{hint}")


def _install_files(env: SkillsEnv, package: str, wheels: Sequence[Path]) -> list[str]:
    """Install exactly ``wheels``; only new files may appear. Returns them."""
    hasher = skillsbase.hasher(env)
    before = envfiles.manifest(env.root, skip=[skillsbase.RECORDS], hasher=hasher)
    args = ["install", "--quiet", "--no-index", "--no-deps", *BINARY_ARGS]
    result = skillsbase.env_pip(env, [*args, "--no-warn-script-location", *map(str, wheels)])
    after = envfiles.manifest(env.root, skip=[skillsbase.RECORDS], hasher=hasher)
    skillsbase.keep(env, hasher)
    changes = envfiles.differences(before, after)
    replaced = [c for c in changes if not c.startswith("+")]
    if result.returncode == 0 and not replaced:
        return [c[1:] for c in changes]
    state = _undo(env, before, after, hasher)
    if result.returncode != 0:
        why = f"pip failed to install {package}: {last_error(result)}"
    else:
        why = f"the install of {package} changed files it may not: {envfiles.summary(replaced)}"
    raise SkillPackageError(f"{why}; {state}")


def _undo(
    env: SkillsEnv, before: Mapping[str, str], after: Mapping[str, str], hasher: envfiles.Hasher
) -> str:
    """Delete every file that is new since ``before``; say whether all hashes match again."""
    for rel in sorted(set(after) - set(before), reverse=True):
        path = env.root / rel
        path.unlink(missing_ok=True)
        folder = path.parent
        while folder != env.root and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    now = envfiles.manifest(env.root, skip=[skillsbase.RECORDS], hasher=hasher)
    left = envfiles.differences(before, now)
    if not left:
        return "the skills environment is as before (every file's sha256 matches)"
    return (
        f"the skills environment still differs in {envfiles.summary(left)}: "
        f"remove {env.root} and install the skills again"
    )


def _record(
    env: SkillsEnv, name: str, version: str, new: Mapping[str, str], files: Sequence[str]
) -> None:
    folder = skillsbase.records(env)
    folder.mkdir(mode=0o755, exist_ok=True)
    record = {"distribution": name, "version": version, "added": dict(sorted(new.items()))}
    record["files"] = sorted(files)
    (folder / f"{normalize(name)}.json").write_text(json.dumps(record, indent=1) + "\n")


def skill_names(env: SkillsEnv) -> dict[str, list[str]]:
    """Skill name → the distributions of the skills environment registering it."""
    found: dict[str, list[str]] = {}
    for dist in metadata.distributions(path=[str(env.site_packages)]):
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP:
                found.setdefault(ep.name, []).append(dist.metadata["Name"] or "?")
    return found


def persona_lines(env: SkillsEnv, distribution: str, skills: Sequence[str]) -> list[str]:
    """The persona tables to add; ``from`` when another distribution has the name too."""
    registered = skill_names(env)
    ours = first_party_skills()
    lines: list[str] = []
    for name in skills:
        lines.append(f"[skills.{name}]")
        if len(registered.get(name, [])) > 1 or name in ours:
            lines.append(f'from = "{distribution}"')
    return lines


def _skills_of(env: SkillsEnv, distribution: str) -> list[str]:
    for dist in metadata.distributions(path=[str(env.site_packages)]):
        if normalize(dist.metadata["Name"] or "") == normalize(distribution):
            return sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)
    return []


def _installed_outcome(env: SkillsEnv, name: str, version: str, tolerated: list[str]) -> Outcome:
    skills = _skills_of(env, name)
    outcome = Outcome(name, version, skills, tolerated)
    outcome.lines.append(
        f"installed {name} {version} into {env.root}"
        + (f" (skills: {', '.join(skills)})" if skills else " (it registers no skill)")
    )
    for item in tolerated:
        outcome.lines.append(f"  pure Python, installed despite its marker: {item}")
    if skills:
        outcome.lines.append("add to the persona file, then restart: systemctl restart huxleyd")
        outcome.lines.extend(f"  {line}" for line in persona_lines(env, name, skills))
    return outcome


def to_uninstall(
    env: SkillsEnv, name: str, present: Mapping[str, pins.Installed], base: Collection[str]
) -> tuple[list[str], bool]:
    """What removing ``name`` uninstalls: what its install added, less what the base and
    the other installed skills still need. The bool says whether the install was recorded."""
    record = skillsbase.records(env) / f"{normalize(name)}.json"
    if not record.is_file():
        return [normalize(name)], False
    added = {normalize(n) for n in json.loads(record.read_text()).get("added", {})}
    added.add(normalize(name))
    others = [n for n in present if n not in added]
    still_needed = pins.closure([*others, *base], present)
    return sorted(n for n in added if n in present and n not in still_needed), True


def _removed_files(env: SkillsEnv, names: Collection[str]) -> set[str]:
    """Every path (relative to the environment) the RECORDs of ``names`` list."""
    owners = envfiles.owners(env.site_packages)
    site = env.site_packages.relative_to(env.root)
    return {
        os.path.normpath(f"{site}/{path}")
        for path, who in owners.paths.items()
        if normalize(who) in names
    }


def _expected_loss(path: str, owned: set[str]) -> bool:
    if path in owned:
        return True
    parts = path.split("/")
    if len(parts) >= 2 and parts[-2] == "__pycache__":  # pip drops a module's .pyc with it
        source = "/".join([*parts[:-2], parts[-1].split(".", 1)[0] + ".py"])
        return source in owned
    return False


def remove(package: str, env: SkillsEnv | None = None) -> Outcome:
    """Uninstall ``package`` and what its install added; say which persona tables to delete."""
    env = env or skills_env()
    name = requested_name(package, allow_url=False) or package
    if normalize(name) in DAEMON_DISTRIBUTIONS:
        raise SkillPackageError(f"refused: {name} is part of the daemon, not a skill package")
    present = pins.installed([str(env.site_packages)]) if env.exists() else {}
    base = skillsbase.base_distributions(env)
    if normalize(name) in base:
        raise SkillPackageError(
            f"refused: {name} is part of the skills environment's base, not a skill package"
        )
    have = present.get(normalize(name))
    if have is None:
        raise SkillPackageError(f"{name} is not installed in {env.root}")
    skills = _skills_of(env, name)
    names, recorded = to_uninstall(env, name, present, base)
    owned = _removed_files(env, set(names))
    hasher = skillsbase.hasher(env)
    before = envfiles.manifest(env.root, skip=[skillsbase.RECORDS], hasher=hasher)
    result = skillsbase.env_pip(env, ["uninstall", "--yes", "--quiet", *names])
    after = envfiles.manifest(env.root, skip=[skillsbase.RECORDS], hasher=hasher)
    skillsbase.keep(env, hasher)
    if result.returncode != 0:
        raise SkillPackageError(f"pip failed to uninstall {name}: {last_error(result)}")
    unexpected = [
        c
        for c in envfiles.differences(before, after)
        if not (c.startswith("-") and _expected_loss(c[1:], owned))
    ]
    (skillsbase.records(env) / f"{normalize(name)}.json").unlink(missing_ok=True)
    outcome = Outcome(have.name, have.version, skills)
    others = [n for n in names if n != normalize(name)]
    outcome.lines.append(
        f"removed {have.name} {have.version} from {env.root}"
        + (f" (and what its install added: {', '.join(others)})" if others else "")
        + ("" if recorded else " (its install was not recorded: its dependencies stay)")
    )
    if unexpected:  # pip removed what is not the package's, or something else wrote
        raise SkillPackageError(
            f"{outcome.lines[0]}; but the skills environment also changed: "
            f"{envfiles.summary(unexpected)}"
        )
    if skills:
        tables = ", ".join(f"[skills.{s}]" for s in skills)
        outcome.lines.append(
            f"delete {tables} from the persona file (or the daemon runs degraded without it), "
            "then: systemctl restart huxleyd"
        )
    return outcome
