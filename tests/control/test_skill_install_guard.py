"""A skill install never changes what is installed, and runs no package code unasked.

Real pip in the skills environment the tests share, offline against wheels
and sdists built here; each refusal compares every file of the skills
environment before and after, by hash.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from huxleyd.control.install.envfiles import differences
from tests.control.skillenv_world import World, refused
from tests.control.test_skill_packages import demo_wheel
from tests.fakes.wheels import build_sdist, build_wheel, cached_wheel, fetch_dists

SETUP_PY = """
import os
from setuptools import setup

with open({marker!r}, "a") as f:
    f.write(f"{{os.geteuid()}}\\n")
setup(name={name!r}, version="1.0", py_modules=[])
"""

SDK = "huxley-sdk>=0.1.1,<0.2"


def setup_py(marker: Path, name: str) -> str:
    return SETUP_PY.format(marker=str(marker), name=name)


def marker_in(world: World, name: str) -> Path:
    """Where setup.py notes each run and its uid: a folder anyone (the builder) may write."""
    folder = world.index.parent / f"ran-{name}"
    folder.mkdir()
    folder.chmod(0o777)
    return folder / "setup-py-ran"


def refused_unchanged(world: World, package: str, *extra: str) -> str:
    before = world.skills_files()
    line = refused(world.install(package, *extra))
    assert differences(before, world.skills_files()) == []
    return line


def test_a_skill_pinning_a_base_dependency_is_refused(guard: World) -> None:
    """The websockets==10.0 skill of old, now against the SDK's numpy in the skills env."""
    world = guard
    import numpy

    build_wheel(world.index, name="numpy", version="1.0", files={"numpy/__init__.py": ""})
    demo_wheel(world.index, name="huxley-skill-np", requires=["numpy==1.0"])
    assert refused_unchanged(world, "huxley-skill-np") == (
        'refused: huxley-skill-np requires "numpy==1.0", '
        f"but the skills environment's base pins numpy=={numpy.__version__}"
    )


def test_a_skill_needing_huxleyd_is_refused(guard: World) -> None:
    world = guard
    build_wheel(world.index, name="huxleyd", version="9.0", files={"huxleyd_other/__init__.py": ""})
    demo_wheel(world.index, name="huxley-skill-hd", requires=[SDK, "huxleyd>=9"])
    assert refused_unchanged(world, "huxley-skill-hd") == (
        "refused: huxley-skill-hd would install huxleyd 9.0, which is the daemon's own distribution"
    )


def test_a_dependency_changing_another_skills_package_is_refused(guard: World) -> None:
    world = guard
    for version in ("1.0", "2.0"):
        build_wheel(world.index, name="helper", version=version, files={"helper/__init__.py": ""})
    build_wheel(
        world.index, name="huxley-skill-a", version="1.0", files={}, requires=["helper==1.0"]
    )
    build_wheel(
        world.index, name="huxley-skill-b", version="1.0", files={}, requires=["helper==2.0"]
    )
    assert world.install("huxley-skill-a").returncode == 0
    assert refused_unchanged(world, "huxley-skill-b") == (
        'refused: huxley-skill-b requires "helper==2.0", but helper==1.0 is installed and a '
        "skill install only adds distributions (remove what needs it first)"
    )
    assert world.huxleyctl("skills", "remove", "huxley-skill-a").returncode == 0


def test_a_url_or_a_path_needs_allow_url(guard: World, tmp_path: Path) -> None:
    """The wheel sits in a folder only its owner may enter (pytest's, or an admin's home):
    huxleyctl copies it where the unprivileged planner can read it."""
    world = guard
    tmp_path.chmod(0o700)
    wheel = demo_wheel(tmp_path / "elsewhere", name="huxley-skill-url")
    by_url = refused_unchanged(world, f"huxley-skill-url @ {wheel.as_uri()}")
    assert by_url == (
        f"refused: 'huxley-skill-url @ {wheel.as_uri()}' names a URL ({wheel.as_uri()}), "
        "not the index; --allow-url installs from one"
    )
    assert refused_unchanged(world, str(wheel)) == (
        f"refused: {str(wheel)!r} is a path or a URL, not a name on the index; "
        "--allow-url installs from one"
    )
    allowed = world.install(str(wheel), "--allow-url")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.startswith(f"installed huxley-skill-url 0.1.0 into {world.skills} ")
    assert world.huxleyctl("skills", "remove", "huxley-skill-url").returncode == 0


def test_a_dependency_from_a_url_needs_allow_url(guard: World) -> None:
    world = guard
    helper = build_wheel(
        guard.index.parent / "elsewhere", name="urlhelper", version="1.0", files={}
    )
    demo_wheel(
        world.index, name="huxley-skill-urldep", requires=[SDK, f"urlhelper @ {helper.as_uri()}"]
    )
    assert refused_unchanged(world, "huxley-skill-urldep") == (
        f"refused: urlhelper would come from {helper.as_uri()}, not from the index; "
        "--allow-url installs from a URL or a path"
    )


def test_an_sdist_is_never_built_by_default(guard: World) -> None:
    """Planning used to run setup.py (as root, on the device): the marker must not appear."""
    world, marker = guard, marker_in(guard, "never")
    build_sdist(world.index, name="sneaky", version="1.0", setup_py=setup_py(marker, "sneaky"))
    demo_wheel(world.index, name="huxley-skill-sneaky", requires=[SDK, "sneaky"])
    line = refused_unchanged(world, "huxley-skill-sneaky")
    assert line.startswith("pip cannot install huxley-skill-sneaky: ")
    assert line.endswith(" (wheels only; --allow-sdist builds from source)")
    assert not marker.exists()


def test_allow_sdist_builds_unprivileged_and_once(guard: World) -> None:
    """As root, setup.py runs as the build user, in one build (no second run for the plan
    or the install), and only the wheel it made is checked and installed."""
    setuptools = cached_wheel(fetch_dists(["setuptools==75.8.0"]), "setuptools==75.8.0")
    world = guard
    shutil.copy(setuptools, world.index)
    marker = marker_in(world, "sdist")
    build_sdist(world.index, name="sneakier", version="1.0", setup_py=setup_py(marker, "sneakier"))
    demo_wheel(world.index, name="huxley-skill-sneakier", requires=[SDK, "sneakier"])
    done = world.install("huxley-skill-sneakier", "--allow-sdist")
    assert done.returncode == 0, done.stderr
    runs = [int(line) for line in marker.read_text().split()]
    assert runs and 0 not in runs  # setup.py ran, never as root
    assert len(runs) <= 3, runs  # one PEP 517 build: requires, metadata, wheel
    site = next(world.skills.glob("lib/python3*/site-packages"))
    assert (site / "sneakier-1.0.dist-info").is_dir()
    gone = world.huxleyctl("skills", "remove", "huxley-skill-sneakier")
    assert gone.returncode == 0, gone.stderr
    assert "(and what its install added: sneakier)" in gone.stdout


def test_allow_url_with_an_sdist_is_refused_without_allow_sdist(guard: World) -> None:
    """Wheels only: a source archive named as the request is refused before pip sees it."""
    world = guard
    marker = marker_in(world, "url")
    sdist = build_sdist(
        world.index.parent / "elsewhere",
        name="sneakiest",
        version="1.0",
        setup_py=setup_py(marker, "sneakiest"),
    )
    assert refused_unchanged(world, str(sdist), "--allow-url") == (
        f"refused: {sdist} is a source package (wheels only; --allow-sdist builds it, unprivileged)"
    )
    assert not marker.exists()
