"""A skill install never changes the daemon's packages, runs no package code unasked,
and leaves ``pip freeze`` as it was when it fails or is removed.

Real pip in a throwaway venv, offline against wheels and sdists built here;
each refusal compares ``pip freeze`` before and after.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.control.skillpkgs import BUILD_USER
from tests.control.test_skill_packages import demo_wheel, huxleyctl, offline
from tests.fakes.wheels import build_sdist, build_wheel, daemon_venv

SETUP_PY = """
import os
from setuptools import setup

with open({marker!r}, "a") as f:
    f.write(f"{{os.geteuid()}}\\n")
setup(name="sneaky", version="1.0", py_modules=[])
"""


def freeze(python: Path) -> list[str]:
    result = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True
    )
    return result.stdout.splitlines()


def refused_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "installed" not in result.stdout
    (line,) = result.stderr.splitlines()
    return line.removeprefix("huxleyctl: skills install: ")


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    return daemon_venv(tmp_path / "venv")


def test_a_skill_pinning_a_daemon_dependency_is_refused(venv: Path, tmp_path: Path) -> None:
    """The websockets==10.0 skill that once downgraded the daemon's websockets."""
    index = tmp_path / "index"
    ours = metadata.version("websockets")
    build_wheel(index, name="websockets", version="10.0", files={"websockets/__init__.py": ""})
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "websockets==10.0"])
    before = freeze(venv)
    refused = huxleyctl(venv, "install", "huxley-skill-demo", *offline(index))
    assert refused_line(refused) == (
        f'refused: huxley-skill-demo requires "websockets==10.0", '
        f"but the daemon pins websockets=={ours}"
    )
    assert freeze(venv) == before


def test_a_skill_needing_another_huxleyd_is_refused(venv: Path, tmp_path: Path) -> None:
    """A package depending on the daemon itself (the check a mutation switched off)."""
    index = tmp_path / "index"
    build_wheel(index, name="huxleyd", version="9.0", files={"huxleyd_other/__init__.py": ""})
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "huxleyd>=9"])
    before = freeze(venv)
    refused = huxleyctl(venv, "install", "huxley-skill-demo", *offline(index))
    assert refused_line(refused) == (
        f'refused: huxley-skill-demo requires "huxleyd>=9", '
        f"but the daemon pins huxleyd=={metadata.version('huxleyd')}"
    )
    assert freeze(venv) == before


def test_a_dependency_changing_another_skills_package_is_refused(
    venv: Path, tmp_path: Path
) -> None:
    index = tmp_path / "index"
    for version in ("1.0", "2.0"):
        build_wheel(index, name="helper", version=version, files={"helper/__init__.py": ""})
    build_wheel(index, name="huxley-skill-a", version="1.0", files={}, requires=["helper==1.0"])
    build_wheel(index, name="huxley-skill-b", version="1.0", files={}, requires=["helper==2.0"])
    assert huxleyctl(venv, "install", "huxley-skill-a", *offline(index)).returncode == 0
    before = freeze(venv)
    refused = huxleyctl(venv, "install", "huxley-skill-b", *offline(index))
    assert refused_line(refused) == (
        'refused: huxley-skill-b requires "helper==2.0", but helper==1.0 is installed and a '
        "skill install only adds distributions (remove what needs it first)"
    )
    assert freeze(venv) == before


def test_a_url_or_a_path_needs_allow_url(venv: Path, tmp_path: Path) -> None:
    wheel = demo_wheel(tmp_path / "index")
    before = freeze(venv)
    by_url = huxleyctl(venv, "install", f"huxley-skill-demo @ {wheel.as_uri()}")
    assert refused_line(by_url) == (
        f"refused: 'huxley-skill-demo @ {wheel.as_uri()}' names a URL ({wheel.as_uri()}), "
        "not the index; --allow-url installs from one"
    )
    by_path = huxleyctl(venv, "install", str(wheel))
    assert refused_line(by_path) == (
        f"refused: {str(wheel)!r} is a path or a URL, not a name on the index; "
        "--allow-url installs from one"
    )
    assert freeze(venv) == before
    allowed = huxleyctl(venv, "install", str(wheel), "--allow-url")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.startswith("installed huxley-skill-demo 0.1.0 into ")


def test_a_dependency_from_a_url_needs_allow_url(venv: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    helper = build_wheel(tmp_path / "elsewhere", name="helper", version="1.0", files={})
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", f"helper @ {helper.as_uri()}"])
    before = freeze(venv)
    refused = huxleyctl(venv, "install", "huxley-skill-demo", *offline(index))
    assert refused_line(refused) == (
        f"refused: helper would come from {helper.as_uri()}, not from the index; "
        "--allow-url installs from a URL or a path"
    )
    assert freeze(venv) == before


def test_an_sdist_is_never_built_by_default(venv: Path, tmp_path: Path) -> None:
    """Planning used to run setup.py (as root, on the device): the marker must not appear."""
    index, marker = tmp_path / "index", tmp_path / "setup-py-ran"
    build_sdist(index, name="sneaky", version="1.0", setup_py=SETUP_PY.format(marker=str(marker)))
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "sneaky"])
    before = freeze(venv)
    refused = huxleyctl(venv, "install", "huxley-skill-demo", *offline(index))
    line = refused_line(refused)
    assert line.startswith("pip cannot install huxley-skill-demo: ")
    assert line.endswith(" (wheels only; --allow-sdist builds from source)")
    assert not marker.exists()
    assert freeze(venv) == before


@pytest.fixture
def world_readable() -> Iterator[Path]:
    """A folder the unprivileged build user can read (pytest's tmp is root-only)."""
    where = Path(tempfile.mkdtemp(prefix="huxleyd-sdist-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where)


@pytest.mark.skipif(os.geteuid() != 0, reason="the unprivileged build is what root gets")
def test_allow_sdist_builds_as_an_unprivileged_user(world_readable: Path) -> None:
    venv = daemon_venv(world_readable / "venv")
    try:
        subprocess.run([str(venv), "-c", ""], user=BUILD_USER, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"{BUILD_USER} cannot run this interpreter here: {exc}")
    index, marker = world_readable / "index", world_readable / "ran" / "setup-py-ran"
    marker.parent.mkdir()
    marker.parent.chmod(0o777)
    build_sdist(index, name="sneaky", version="1.0", setup_py=SETUP_PY.format(marker=str(marker)))
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "sneaky"])
    for path in index.iterdir():
        path.chmod(0o644)
    index.chmod(0o755)
    done = huxleyctl(venv, "install", "huxley-skill-demo", "--allow-sdist", *offline(index))
    assert done.returncode == 0, done.stderr
    uids = {int(line) for line in marker.read_text().split()}
    assert uids and 0 not in uids  # setup.py ran, never as root


def broken_wheel(index: Path) -> Path:
    """A wheel with a file outside its install folder: pip refuses it while installing,
    after the plan (metadata only) accepted it."""
    return build_wheel(
        index, name="zz-broken", version="1.0", files={"../../zz_escape.py": "x = 1\n"}
    )


def test_a_failed_install_leaves_pip_freeze_as_it_was(venv: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    build_wheel(index, name="aa-helper", version="1.0", files={"aa_helper.py": ""})
    broken_wheel(index)
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "aa-helper", "zz-broken"])
    before = freeze(venv)
    failed = huxleyctl(venv, "install", "huxley-skill-demo", *offline(index))
    line = refused_line(failed)
    assert line.startswith("pip failed to install huxley-skill-demo: ")
    assert line.endswith("; the environment is as before")
    assert freeze(venv) == before


def test_remove_restores_what_the_install_changed(venv: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    build_wheel(index, name="helper", version="1.0", files={"helper/__init__.py": ""})
    build_wheel(index, name="shared", version="1.0", files={"shared/__init__.py": ""})
    build_wheel(index, name="huxley-skill-a", version="1.0", files={}, requires=["shared"])
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "helper", "shared"])
    assert huxleyctl(venv, "install", "huxley-skill-a", *offline(index)).returncode == 0
    before = freeze(venv)
    assert huxleyctl(venv, "install", "huxley-skill-demo", *offline(index)).returncode == 0
    assert freeze(venv) != before
    gone = huxleyctl(venv, "remove", "huxley-skill-demo")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines()[0].endswith(" (and what its install added: helper)")
    assert freeze(venv) == before  # shared stays: huxley-skill-a needs it
