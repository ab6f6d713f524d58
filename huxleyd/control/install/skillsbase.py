"""The skills environment's base: a venv, its own pip, and the daemon's own SDK.

Created on the first ``huxleyctl skills install`` (or when it is missing
its base): ``python -m venv`` with the daemon's interpreter (its own pip
from ``ensurepip``, offline), then ``huxley-sdk`` and everything it
requires (structlog, numpy, scipy) installed by that pip from wheels
*repacked from the daemon's environment*: the very files the daemon runs,
zipped with a fresh RECORD (an editable SDK, as in a checkout, is packed
from its source folder). So the skills environment gets our SDK, never
Huxley's, with no network and the same versions on a device, an installed
release and a checkout; nothing is built and no index is asked.

Nothing of the daemon is on the skills environment's path, and nothing of
the skills environment is on the daemon's. :data:`BASE_MARK` is written
last: a folder without it is a creation that did not finish, and is made
again.
"""

from __future__ import annotations

import csv
import importlib.metadata as metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from huxleyd.control.install import envfiles, pins
from huxleyd.skillhost.sdkcheck import OUR_LABEL, SDK_DISTRIBUTION
from huxleyd.skillhost.skillenv import SkillsEnv
from huxleyd.skillhost.sources import normalize

RECORDS = "huxleyd-records"
"""The folder (in the skills environment's root) where huxleyctl keeps what each
install added; the one part of it that file manifests leave out."""

BASE_MARK = "base.json"
"""In :data:`RECORDS`: the base distributions, written once the base is installed."""

_SKIPPED_METADATA = ("INSTALLER", "REQUESTED", "RECORD", "direct_url.json")


class BaseError(Exception):
    """The skills environment could not be made; one line."""


def records(env: SkillsEnv) -> Path:
    return env.root / RECORDS


HASHES = "hashes.json"
"""In :data:`RECORDS`: the hashes of the last manifest, by inode, size, mtime and ctime."""


def hasher(env: SkillsEnv) -> envfiles.Hasher:
    return envfiles.Hasher.load(records(env) / HASHES)


def keep(env: SkillsEnv, used: envfiles.Hasher) -> None:
    if records(env).is_dir():
        used.save(records(env) / HASHES)


def env_pip(env: SkillsEnv, args: Sequence[str], **extra: Any) -> subprocess.CompletedProcess[str]:
    """``<env>/bin/python -m pip ARGS``: the skills environment's own pip."""
    return subprocess.run(
        [str(env.python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        check=False,
        umask=0o022,  # the skill user reads what root installs here
        **extra,
    )


def base_distributions(env: SkillsEnv) -> dict[str, str]:
    """What the base holds (normalized name → version), from :data:`BASE_MARK`."""
    mark = records(env) / BASE_MARK
    try:
        return dict(json.loads(mark.read_text())["base"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def ready(env: SkillsEnv) -> bool:
    return env.exists() and (records(env) / BASE_MARK).is_file()


def ensure(env: SkillsEnv) -> list[str]:
    """Make the skills environment if it is not there yet; the lines to say."""
    if ready(env):
        return []
    if env.root.exists():  # a creation that did not finish, or an environment broken since
        skills = [p.stem for p in records(env).glob("*.json") if p.name not in (BASE_MARK, HASHES)]
        if skills:
            raise BaseError(
                f"the skills environment {env.root} has no interpreter or no base any more "
                f"(skills installed in it: {', '.join(sorted(skills))}); remove the folder "
                "and install the skills again"
            )
        shutil.rmtree(env.root)
    try:
        return _create(env)
    except BaseException:
        shutil.rmtree(env.root, ignore_errors=True)
        raise


def _needs(root: str, present: Mapping[str, pins.Installed]) -> set[str]:
    """``root`` and what it requires, transitively; extras are not asked for here."""
    from packaging.requirements import InvalidRequirement, Requirement

    todo, seen = [normalize(root)], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in present:
            continue
        seen.add(name)
        for line in present[name].requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(normalize(req.name))
    return seen


def _closure() -> tuple[dict[str, pins.Installed], list[str]]:
    present = pins.installed()
    names = sorted(_needs(SDK_DISTRIBUTION, present))
    if normalize(SDK_DISTRIBUTION) not in names:
        raise BaseError(f"no {SDK_DISTRIBUTION} distribution in {sys.prefix} to copy")
    return present, names


def _install_base(env: SkillsEnv, names: Sequence[str], *extra: str) -> None:
    """The daemon's copies of pip and ``names``, installed by the environment's own pip.

    The first time, that pip runs from its wheel (``python pip.whl/pip``, as
    pip documents for a bootstrap) to install itself; ensurepip would cost
    seconds and bring an older pip. Only the SDK and structlog are compiled
    ahead (the skill user cannot write ``__pycache__`` here); numpy and scipy
    are thousands of modules a skill may never import."""
    with tempfile.TemporaryDirectory(prefix="huxleyctl-base-") as tmp:
        first = not (env.site_packages / "pip").is_dir()
        pip_wheel = repack(metadata.distribution("pip"), Path(tmp))
        wheels = [repack(metadata.distribution(n), Path(tmp)) for n in names]
        if first:
            wheels.insert(0, pip_wheel)
        args = ["install", "--quiet", "--no-index", "--no-deps", "--no-warn-script-location"]
        args += ["--disable-pip-version-check", "--no-compile", *extra]
        runner = [str(env.python), f"{pip_wheel}/pip"] if first else [str(env.python), "-m", "pip"]
        done = subprocess.run(
            [*runner, *args, *map(str, wheels)],
            capture_output=True,
            text=True,
            check=False,
            umask=0o022,
        )
    if done.returncode == 0:
        compiled = [str(env.site_packages / t) for t in ("huxley_sdk", "structlog")]
        subprocess.run(
            [str(env.python), "-m", "compileall", "-q", *compiled],
            capture_output=True,
            check=False,
            umask=0o022,
        )
    if done.returncode != 0:
        raise BaseError(f"cannot install the SDK into {env.root}: {_tail(done)}")


def repair(env: SkillsEnv) -> list[str]:
    """Put the daemon's SDK back into the skills environment (and any base distribution
    that is missing or at another version); make the environment if there is none."""
    if not ready(env):
        return ensure(env)
    present, names = _closure()
    found = {
        normalize(d.metadata["Name"] or ""): d.version
        for d in metadata.distributions(path=[str(env.site_packages)])
    }
    broken = [
        n for n in names if n == normalize(SDK_DISTRIBUTION) or found.get(n) != present[n].version
    ]
    _install_base(env, broken, "--force-reinstall")
    base = {n: present[n].version for n in ["pip", *names] if n in present}
    (records(env) / BASE_MARK).write_text(json.dumps({"base": base}, indent=1) + "\n")
    problem = sdk_problem(env)
    if problem is not None:
        raise BaseError(f"{problem} after the repair; remove {env.root} and install again")
    listed = ", ".join(f"{present[n].name} {present[n].version}" for n in broken)
    return [f"repaired the skills environment {env.root}: {listed}"]


def _create(env: SkillsEnv) -> list[str]:
    env.root.parent.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env.root)],
        capture_output=True,
        text=True,
        check=False,
        umask=0o022,
    )
    if made.returncode != 0:
        raise BaseError(f"cannot create the skills environment {env.root}: {_tail(made)}")
    present, names = _closure()
    _install_base(env, names)
    base = {n: present[n].version for n in ["pip", *names]}
    folder = records(env)
    folder.mkdir(mode=0o755, exist_ok=True)
    (folder / BASE_MARK).write_text(json.dumps({"base": base}, indent=1) + "\n")
    listed = ", ".join(f"{present[n].name} {present[n].version}" for n in names)
    return [f"created the skills environment {env.root} ({listed})"]


def _tail(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (result.stderr + result.stdout).splitlines() if ln.strip()]
    return (lines or ["no output"])[-1]


def _is_editable(dist: metadata.Distribution) -> bool:
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        return bool(json.loads(text).get("dir_info", {}).get("editable", False))
    except ValueError:
        return False


def _metadata_files(
    dist: metadata.Distribution, info: Path, target: str
) -> list[tuple[str, bytes]]:
    """The ``.dist-info`` files of the wheel (an ``.egg-info``'s PKG-INFO becomes METADATA)."""
    if info.name.endswith(".dist-info"):
        return [
            (f"{target}/{p.name}", p.read_bytes())
            for p in sorted(info.iterdir())
            if p.is_file() and p.name not in _SKIPPED_METADATA
        ]
    out = [(f"{target}/METADATA", (info / "PKG-INFO").read_bytes())]
    out.append((f"{target}/WHEEL", _PURE_WHEEL.encode()))
    for name in ("entry_points.txt", "top_level.txt"):
        if (info / name).is_file():
            out.append((f"{target}/{name}", (info / name).read_bytes()))
    return out


_PURE_WHEEL = "Wheel-Version: 1.0\nGenerator: huxleyctl\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _from_source(dist: metadata.Distribution) -> list[tuple[str, Path]]:
    """An editable (or egg-info) distribution's files: its top-level packages as imported."""
    out: list[tuple[str, Path]] = []
    for top in (dist.read_text("top_level.txt") or "").split():
        spec = importlib.util.find_spec(top)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if spec.submodule_search_locations:
            root = origin.parent
            out += [
                (f"{top}/{f.relative_to(root)}", f)
                for f in sorted(root.rglob("*"))
                if f.is_file() and "__pycache__" not in f.parts
            ]
        else:
            out.append((origin.name, origin))
    return out


def _files_of(dist: metadata.Distribution, info: Path) -> list[tuple[str, Path]]:
    """(path in the wheel, file on disk) of what ``dist`` installed in site-packages."""
    if _is_editable(dist) or not info.name.endswith(".dist-info"):
        return _from_source(dist)
    out: list[tuple[str, Path]] = []
    for row in csv.reader((dist.read_text("RECORD") or "").splitlines()):
        if not row:
            continue
        rel = os.path.normpath(row[0])
        if rel.startswith(("..", "/")) or rel.startswith(info.name + "/"):
            continue  # scripts (pip writes them again from entry_points.txt); metadata above
        if "__pycache__" in rel.split("/"):
            continue
        path = info.parent / rel
        if path.is_file():
            out.append((rel, path))
    return out


def repack(dist: metadata.Distribution, dest: Path) -> Path:
    """A wheel of the installed ``dist``: its files, its metadata, a new RECORD."""
    from huxleyd.control.install.wheelcheck import record_line

    info = Path(str(dist._path))  # type: ignore[attr-defined]
    wheel_meta = dist.read_text("WHEEL") or _PURE_WHEEL
    tags = [ln.split(":", 1)[1].strip() for ln in wheel_meta.splitlines() if ln.startswith("Tag:")]
    parts = [t.split("-") for t in tags or ["py3-none-any"]]
    tag = "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))
    name = normalize(dist.metadata["Name"]).replace("-", "_")
    target = dest / f"{name}-{dist.version}-{tag}.whl"
    meta_dir = f"{name}-{dist.version}.dist-info"
    rows: list[str] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zf:
        for arcname, data in _metadata_files(dist, info, meta_dir):
            zf.writestr(arcname, data)
            rows.append(record_line(arcname, data))
        for arcname, path in _files_of(dist, info):
            data = path.read_bytes()
            zf.writestr(arcname, data)
            rows.append(record_line(arcname, data))
        rows.append(f"{meta_dir}/RECORD,,")
        zf.writestr(f"{meta_dir}/RECORD", "\n".join(rows) + "\n")
    return target


def sdk_problem(env: SkillsEnv) -> str | None:
    """What is wrong with the skills environment's huxley-sdk, or None when it is ours
    and the daemon's version (an update of the daemon may bring a newer SDK)."""
    found = {
        normalize(d.metadata["Name"] or ""): d.version
        for d in metadata.distributions(path=[str(env.site_packages)])
    }
    version = found.get(normalize(SDK_DISTRIBUTION))
    if version is None or not version.endswith(OUR_LABEL):
        what = f"{SDK_DISTRIBUTION} {version}" if version else f"no {SDK_DISTRIBUTION}"
        return (
            f"the skills environment {env.root} has {what}, not huxleyd's "
            f"({SDK_DISTRIBUTION} *{OUR_LABEL})"
        )
    try:
        daemon = metadata.version(SDK_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    if daemon != version:
        return (
            f"the skills environment {env.root} has {SDK_DISTRIBUTION} {version}, "
            f"the daemon {daemon}"
        )
    return None
