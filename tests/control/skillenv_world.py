"""A daemon venv and a skills environment for the install tests, shared per module.

:func:`make_world` makes a throwaway daemon venv running this checkout
(:func:`tests.fakes.wheels.daemon_venv`) and, through a first
``huxleyctl skills install``, its skills environment; ``huxleyctl`` runs as
an admin runs it, with the daemon venv's interpreter and
``HUXLEYD_SKILLS_ENV`` naming the skills environment. Every install runs
offline against a folder of wheels written in the test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from huxleyd.control.install.envfiles import Hasher, Manifest, manifest
from huxleyd.control.install.skillbuild import BUILD_USER
from huxleyd.control.install.skillsbase import RECORDS
from huxleyd.skillhost.skillenv import ENV_VARIABLE
from tests.fakes.wheels import ROOT, build_wheel, daemon_venv

SDK = "huxley-sdk>=0.1.1,<0.2"


@dataclass(frozen=True, slots=True)
class World:
    python: Path
    """The daemon venv's interpreter (what runs huxleyctl)."""
    skills: Path
    """The skills environment's folder."""
    index: Path
    """The local folder of wheels."""
    hasher: Hasher = field(default_factory=Hasher, compare=False)
    """Reads a file again only when its inode, size, mtime or ctime moved."""

    @property
    def daemon(self) -> Path:
        return self.python.parent.parent

    def huxleyctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-m", "huxleyd.control.cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, ENV_VARIABLE: str(self.skills)},
        )

    def install(self, package: str, *extra: str) -> subprocess.CompletedProcess[str]:
        offline = ["--no-index", "--find-links", str(self.index)]
        return self.huxleyctl("skills", "install", package, *offline, *extra)

    def skills_files(self) -> Manifest:
        return manifest(self.skills, skip=[RECORDS], hasher=self.hasher)

    def daemon_files(self) -> Manifest:
        return manifest(self.daemon, hasher=self.hasher)

    def wheel(self, name: str, files: dict[str, str], **spec: object) -> Path:
        spec.setdefault("requires", [SDK])
        return build_wheel(self.index, name=name, version="1.0", files=files, **spec)  # type: ignore[arg-type]


def builder_cannot_run(python: Path) -> str | None:
    """Why the build user (who plans and builds when huxleyctl runs as root) cannot run
    ``python``, or None."""
    if os.geteuid() != 0:
        return None
    try:
        subprocess.run([str(python), "-c", ""], user=BUILD_USER, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"{BUILD_USER} cannot run {python} here: {exc}"
    return None


def readable_daemon_venv(where: Path) -> Path:
    """A daemon venv on an interpreter the build user may run: this one, or the system's
    python3 of the same version (this one may live in root's home, as with pyenv)."""
    python = daemon_venv(where / "daemon")
    if builder_cannot_run(python) is None:
        return python
    system = Path("/usr/bin/python3")
    probe = subprocess.run(
        [str(system), "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or probe.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip(f"{BUILD_USER} cannot run this interpreter and there is no other 3.x here")
    shutil.rmtree(where / "daemon")
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(where / "daemon")], check=True)
    site = next((where / "daemon").glob("lib/python3*/site-packages"))
    paths = [p for p in sys.path if p.endswith("site-packages") or p.endswith("/src")]
    (site / "zz_huxleyd_checkout.pth").write_text("\n".join([*paths, str(ROOT)]) + "\n")
    return where / "daemon" / "bin" / "python"


@contextmanager
def readable_folder() -> Iterator[Path]:
    """A folder the build user can read (pytest's tmp is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="huxleyd-skills-test-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def make_world(where: Path, python: Path | None = None) -> World:
    """``where`` must be readable by the build user when root runs the tests."""
    python = python or readable_daemon_venv(where)
    world = World(python, where / "skills-env", where / "index")
    world.index.mkdir()
    made = world.huxleyctl("skills", "repair")  # with no skills environment: makes it
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"created the skills environment {world.skills} (huxley-sdk ")
    return world


def huxleyctl_runs(world: World) -> None:
    """The admin's command still starts (``--help``), in the daemon venv."""
    done = subprocess.run(
        [str(world.python), "-m", "huxleyd.control.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: huxleyctl"), done.stdout[:200]


def refused(result: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refusal (exit 1, nothing printed on stdout)."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    return line.removeprefix("huxleyctl: skills install: ")


def this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"
