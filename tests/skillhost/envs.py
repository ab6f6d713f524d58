"""Skills environments for the skill host's tests: real venvs, cached between runs.

A skills environment is a venv with this checkout's ``sdk/`` and skill
wheels, as ``huxleyctl skills install`` makes one. Building one costs tens
of seconds (pip resolves the SDK's numpy and scipy), so each is kept under
the system's temporary folder, keyed by everything that went into it, built
under an flock and renamed into place complete. The folder is world-readable
(0755): the skill host runs as the skill user, who must read it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from huxleyd.skillhost.launchers import SKILL_USER
from huxleyd.skillhost.skillenv import SkillsEnv
from tests.fakes.unprivileged import why_others_cannot_run
from tests.fakes.wheels import ROOT, build_wheel

CACHE = Path(tempfile.gettempdir()) / "huxleyd-skills-envs"
PROBE = Path(__file__).with_name("probe_skill.py")


def _sdk_key(python: str = sys.executable) -> str:
    digest = hashlib.sha256((sys.version if python == sys.executable else python).encode())
    for path in sorted((ROOT / "sdk").rglob("*")):
        if path.is_file() and "egg-info" not in str(path) and "__pycache__" not in str(path):
            digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def _key(wheels: Sequence[Path], python: str = sys.executable) -> str:
    digest = hashlib.sha256(_sdk_key(python).encode())
    for wheel in wheels:  # by content: a zip's timestamps change with every build
        with zipfile.ZipFile(wheel) as zf:
            for name in sorted(zf.namelist()):
                digest.update(name.encode() + zf.read(name))
    return digest.hexdigest()[:16]


def skills_env_with(wheels: Sequence[Path], python: str = sys.executable) -> SkillsEnv:
    """A skills environment of ``python`` holding our SDK and ``wheels`` (built once, then reused).

    The SDK's environment (pip resolving numpy and scipy: the slow part) is
    built once per SDK and copied for each set of wheels."""
    CACHE.mkdir(mode=0o755, exist_ok=True)
    os.chmod(CACHE, 0o755)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = _kept(CACHE / f"sdk-{_sdk_key(python)}", lambda where: _venv_with_sdk(where, python))
        root = _kept(CACHE / _key(wheels, python), lambda where: _add_wheels(base, where, wheels))
    env = SkillsEnv(root)
    if os.geteuid() == 0:  # the host runs as the skill user: it must be able to start
        problem = why_others_cannot_run(str(env.python))
        if problem is not None:
            pytest.skip(problem)
    return env


def _kept(root: Path, build: Callable[[Path], None]) -> Path:
    """``root``, built by ``build`` into a private folder and renamed in when complete."""
    if (root / "bin" / "python").exists():
        return root
    building = Path(tempfile.mkdtemp(dir=CACHE, prefix=".building-"))
    try:
        shutil.rmtree(building)
        build(building)
        os.chmod(building, 0o755)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    # venv writes its folder into scripts; the host runs `python -m`, which needs
    # only pyvenv.cfg beside bin/python: a rename (or a copy) keeps that working.
    shutil.rmtree(root, ignore_errors=True)
    building.rename(root)
    return root


def _venv_with_sdk(where: Path, python: str = sys.executable) -> None:
    subprocess.run([python, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, str(ROOT / "sdk")], check=True, capture_output=True)


def _add_wheels(base: Path, where: Path, wheels: Sequence[Path]) -> None:
    shutil.copytree(base, where, symlinks=True)
    if wheels:  # Huxley's packages say >=3.13 but run on 3.11 (tests/compat shows it)
        pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        offline = ["--no-index", "--ignore-requires-python"]
        subprocess.run([*pip, *offline, *map(str, wheels)], check=True)


def probe_wheel(dest: Path) -> Path:
    """``huxley-skill-probe``: tests/skillhost/probe_skill.py as a third-party wheel."""
    return build_wheel(
        dest,
        name="huxley-skill-probe",
        version="0.1.0",
        files={"huxley_probe_skill.py": PROBE.read_text()},
        requires=["huxley-sdk"],
        skills={"probe": "huxley_probe_skill:ProbeSkill"},
    )


def ensure_skill_user() -> str | None:
    """As root: the skill user exists (created with ``useradd --system`` if missing).

    Returns its name, or None when not root (the host then runs as this user).
    """
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SKILL_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SKILL_USER],
            check=True,
        )
    return SKILL_USER


def python_others_exec(skill_user: str) -> str | None:
    """An interpreter an unprivileged process can exec by itself, or None.

    setpriv execs with root's rights still in hand, so a Python under a
    private folder (pyenv in /root) runs through setpriv; a unit's own
    process (hostexec's ``execve``) has no such rights. Checked by having
    the skill user's shell exec it."""
    for python in (sys.executable, "/usr/bin/python3"):  # the system's: what a device has
        if not os.path.exists(python):
            continue
        entry = pwd.getpwnam(skill_user)
        done = subprocess.run(
            [
                "setpriv",
                f"--reuid={entry.pw_uid}",
                f"--regid={entry.pw_gid}",
                "--clear-groups",
                "--",
                "/bin/sh",
                "-c",
                'exec "$0" -c "import venv"',
                python,
            ],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return python
    return None
