"""A skill wheel is checked file by file, and can change no file of the daemon's environment.

Each wheel here is one a hostile or careless author could publish: another
distribution's file, a ``.pth``, a script named ``huxleyctl``, a data file
named like the daemon's ``bin/huxleyd``, one that fails midway, two skills
sharing a dependency. For each: the sha256 of every file of the daemon's
venv is unchanged, ``huxleyctl`` still runs, and where the install was
refused (or failed), every file of the skills environment is as before.
One skills environment serves them all (``skills_world``, ``guard``:
tests/control/conftest.py); each test leaves it as it found it.
"""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
from pathlib import Path

from huxleyd.control.install.envfiles import differences
from tests.control.skillenv_world import World, refused
from tests.fakes.wheels import build_wheel


def refused_and_unchanged(world: World, package: str, *extra: str) -> str:
    before = world.skills_files()
    line = refused(world.install(package, *extra))
    assert differences(before, world.skills_files()) == []
    return line


def test_a_file_of_another_distribution_is_refused(guard: World) -> None:
    world = guard
    world.wheel(
        "websockets", {"websockets/__init__.py": "class ConnectionClosed: ...\n"}, requires=[]
    )
    world.wheel("huxley-skill-ws", {"huxley_skill_ws/__init__.py": ""}, requires=["websockets"])
    world.wheel(
        "huxley-skill-evil",
        {"huxley_skill_evil/__init__.py": "", "websockets/__init__.py": "gone = True\n"},
    )
    assert world.install("huxley-skill-ws").returncode == 0
    assert refused_and_unchanged(world, "huxley-skill-evil") == (
        "refused: websockets/__init__.py in huxley_skill_evil-1.0-py3-none-any.whl "
        "(huxley-skill-evil 1.0): websockets/__init__.py belongs to websockets; "
        "nothing was installed"
    )
    gone = world.huxleyctl("skills", "remove", "huxley-skill-ws")
    assert gone.returncode == 0, gone.stderr
    assert "(and what its install added: websockets)" in gone.stdout


def test_the_daemons_own_package_is_refused(guard: World) -> None:
    guard.wheel("huxley-skill-shadow", {"huxleyd/__init__.py": "", "huxley_sdk/__init__.py": ""})
    assert refused_and_unchanged(guard, "huxley-skill-shadow") == (
        "refused: huxleyd/__init__.py in huxley_skill_shadow-1.0-py3-none-any.whl "
        "(huxley-skill-shadow 1.0): huxleyd is the daemon's own package; nothing was installed"
    )


def test_a_pth_file_is_refused(guard: World) -> None:
    guard.wheel("huxley-skill-pth", {"huxley_skill_pth/__init__.py": "", "zz.pth": "import os\n"})
    assert refused_and_unchanged(guard, "huxley-skill-pth") == (
        "refused: zz.pth in huxley_skill_pth-1.0-py3-none-any.whl (huxley-skill-pth 1.0): "
        "a .pth file runs code in every interpreter of the environment; nothing was installed"
    )


def test_a_script_named_huxleyctl_is_refused(guard: World) -> None:
    script = "huxley_skill_cmd-1.0.data/scripts/huxleyctl"
    guard.wheel("huxley-skill-cmd", {"huxley_skill_cmd/__init__.py": "", script: "#!/bin/sh\n"})
    assert refused_and_unchanged(guard, "huxley-skill-cmd") == (
        f"refused: {script} in huxley_skill_cmd-1.0-py3-none-any.whl (huxley-skill-cmd 1.0): "
        "a skill installs nothing outside site-packages (.data/scripts); nothing was installed"
    )


def test_a_console_script_named_huxleyctl_is_refused(guard: World) -> None:
    guard.wheel(
        "huxley-skill-entry",
        {"huxley_skill_entry/__init__.py": "def main(): ...\n"},
        entry_points={"console_scripts": {"huxleyctl": "huxley_skill_entry:main"}},
    )
    assert refused_and_unchanged(guard, "huxley-skill-entry") == (
        "refused: huxley_skill_entry-1.0.dist-info/entry_points.txt in "
        "huxley_skill_entry-1.0-py3-none-any.whl (huxley-skill-entry 1.0): console_scripts "
        '"huxleyctl = huxley_skill_entry:main": a skill installs no commands '
        "(that one is the daemon's); nothing was installed"
    )


def test_a_data_file_named_like_the_daemons_command_is_refused(guard: World) -> None:
    data = "huxley_skill_data-1.0.data/data/bin/huxleyd"
    guard.wheel("huxley-skill-data", {"huxley_skill_data/__init__.py": "", data: "#!/bin/sh\n"})
    assert refused_and_unchanged(guard, "huxley-skill-data") == (
        f"refused: {data} in huxley_skill_data-1.0-py3-none-any.whl (huxley-skill-data 1.0): "
        "a skill installs nothing outside site-packages (.data/data); nothing was installed"
    )


def test_a_wheel_failing_midway_is_undone_file_by_file(guard: World) -> None:
    """pip writes the first files, then cannot write a name longer than the file system
    allows: the files it wrote are deleted, and every hash matches again."""
    world = guard
    world.wheel("zz-helper", {"zz_helper/__init__.py": "x = 1\n"}, requires=[])
    world.wheel(
        "huxley-skill-midway",
        {"huxley_skill_midway/__init__.py": "", "huxley_skill_midway/" + "a" * 300 + ".py": ""},
        requires=["huxley-sdk>=0.1.1,<0.2", "zz-helper"],
    )
    before = world.skills_files()
    line = refused(world.install("huxley-skill-midway"))
    assert line.startswith("pip failed to install huxley-skill-midway: ")
    assert line.endswith("; the skills environment is as before (every file's sha256 matches)")
    assert differences(before, world.skills_files()) == []


def test_removing_one_of_two_skills_keeps_the_dependency_the_other_needs(guard: World) -> None:
    world = guard
    before = world.skills_files()
    world.wheel("zz-shared", {"zz_shared/__init__.py": "y = 2\n"}, requires=[])
    for name in ("huxley-skill-one", "huxley-skill-two"):
        package = name.replace("-", "_")
        world.wheel(name, {f"{package}/__init__.py": ""}, requires=["zz-shared"])
    assert world.install("huxley-skill-one").returncode == 0  # adds zz-shared
    with_one = world.skills_files()
    assert world.install("huxley-skill-two").returncode == 0
    gone = world.huxleyctl("skills", "remove", "huxley-skill-one")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines()[0].endswith(
        "removed huxley-skill-one 1.0 from " + str(world.skills)
    )
    left = differences(with_one, world.skills_files())
    shared = [c for c in left if "zz_shared" in c]
    assert shared == [], shared  # huxley-skill-two still needs it: not one of its files went
    last = world.huxleyctl("skills", "remove", "huxley-skill-two")
    assert last.returncode == 0, last.stderr
    assert "(and what its install added: zz-shared)" not in last.stdout
    assert [c for c in differences(before, world.skills_files()) if "zz_shared" not in c] == []


def test_a_first_party_skill_name_is_refused_naming_the_from_line(guard: World) -> None:
    world = guard
    assert "timers" in {
        ep.name for ep in metadata.distribution("huxleyd").entry_points
    }  # huxleyd's own
    world.wheel(
        "huxley-skill-timers",
        {"huxley_skill_timers/__init__.py": "class TimersSkill: ...\n"},
        skills={"timers": "huxley_skill_timers:TimersSkill"},
    )
    assert refused_and_unchanged(world, "huxley-skill-timers") == (
        'refused: huxley-skill-timers registers skill "timers", which is also huxleyd\'s own; '
        'a persona would choose this one with [skills.timers] from = "huxley-skill-timers" '
        "(install it anyway with --allow-name timers); nothing was installed"
    )
    done = world.install("huxley-skill-timers", "--allow-name", "timers")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["  [skills.timers]", '  from = "huxley-skill-timers"']
    assert world.huxleyctl("skills", "remove", "huxley-skill-timers").returncode == 0


def _sdk_file(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import huxley_sdk; print(open(huxley_sdk.__file__).read())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_a_foreign_sdk_in_the_skills_environment_is_repaired_by_the_named_command(
    guard: World,
) -> None:
    """Huxley's huxley-sdk put in by hand (the skills environment's own pip): install
    refuses and names ``huxleyctl skills repair``, which puts ours back."""
    world = guard
    foreign = build_wheel(
        world.index.parent / "by-hand",
        name="huxley-sdk",
        version="0.1.1",
        files={"huxley_sdk/__init__.py": "FOREIGN = True\n"},
    )
    skills_python = world.skills / "bin" / "python"
    subprocess.run(
        [str(skills_python), "-m", "pip", "install", "-q", "--no-deps", str(foreign)], check=True
    )
    world.wheel("huxley-skill-after", {"huxley_skill_after/__init__.py": ""})
    line = refused(world.install("huxley-skill-after"))
    assert line == (
        f"the skills environment {world.skills} has huxley-sdk 0.1.1, not huxleyd's "
        "(huxley-sdk *+huxleyd); repair: huxleyctl skills repair; nothing was installed"
    )
    fixed = world.huxleyctl("skills", "repair")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.startswith(f"repaired the skills environment {world.skills}: huxley-sdk ")
    assert _sdk_file(skills_python) == _sdk_file(world.python)  # ours, byte for byte
    assert world.install("huxley-skill-after").returncode == 0
    assert world.huxleyctl("skills", "remove", "huxley-skill-after").returncode == 0
