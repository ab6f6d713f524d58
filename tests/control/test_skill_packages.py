"""``huxleyctl skills install|remove``: real pip, the skills environment, a local index.

Every install runs offline (``--no-index --find-links`` a directory of wheels
built here, or the cached published ones); ``huxleyctl`` runs with a
throwaway daemon venv's interpreter, as an admin runs it, and installs into
the skills environment the tests share (``skills_world``,
tests/control/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from huxleyd.control.install.envfiles import differences
from tests.control.skillenv_world import World, refused
from tests.fakes.wheels import build_wheel, daemon_venv, fetch_dists

SKILL = """
from huxley_sdk import ToolDefinition, ToolResult

class DemoSkill:
    name = "demo"
    tools = [ToolDefinition(name="demo_ping", description="Ping.")]

    async def handle(self, tool_name, args):
        return ToolResult(output="{}")
"""


THIS = f"{sys.version_info.major}.{sys.version_info.minor}"
PAST = f">={sys.version_info.major}.{sys.version_info.minor + 1}"
"""A requires-python this interpreter does not meet (Huxley's skills ask for
>=3.13, which Raspberry Pi OS bookworm's 3.11 does not; on 3.13 the next one)."""


def demo_wheel(index: Path, **overrides: object) -> Path:
    spec: dict[str, object] = {
        "name": "huxley-skill-demo",
        "version": "0.1.0",
        "files": {"huxley_skill_demo/__init__.py": SKILL},
        "requires_python": PAST,
        "requires": ["huxley-sdk>=0.1.1,<0.2"],
        "skills": {"demo": "huxley_skill_demo:DemoSkill"},
    }
    spec.update(overrides)
    return build_wheel(index, **spec)  # type: ignore[arg-type]


def offline(index: Path) -> list[str]:
    return ["--no-index", "--find-links", str(index)]


def test_install_and_remove(guard: World) -> None:
    world = guard
    before = world.skills_files()
    demo_wheel(world.index)
    done = world.install("huxley-skill-demo")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"installed huxley-skill-demo 0.1.0 into {world.skills} (skills: demo)",
        "  pure Python, installed despite its marker: "
        f"huxley-skill-demo 0.1.0 (requires-python {PAST})",
        "add to the persona file, then restart: systemctl restart huxleyd",
        "  [skills.demo]",
    ]
    runs = subprocess.run(
        [str(world.skills / "bin" / "python"), "-c", "import huxley_skill_demo as d; d.DemoSkill"],
        capture_output=True,
        text=True,
    )
    assert runs.returncode == 0, runs.stderr  # with our SDK, in the skills environment
    daemon = subprocess.run(
        [str(world.python), "-c", "import huxley_skill_demo"], capture_output=True, text=True
    )
    assert "No module named 'huxley_skill_demo'" in daemon.stderr  # not on the daemon's path
    gone = world.huxleyctl("skills", "remove", "huxley-skill-demo")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines() == [
        f"removed huxley-skill-demo 0.1.0 from {world.skills}",
        "delete [skills.demo] from the persona file (or the daemon runs degraded without it), "
        "then: systemctl restart huxleyd",
    ]
    assert differences(before, world.skills_files()) == []


def test_a_skill_needing_another_sdk_is_refused(guard: World) -> None:
    world = guard
    demo_wheel(world.index, name="huxley-skill-newsdk", requires=["huxley-sdk>=0.3"])
    build_wheel(
        world.index, name="huxley-sdk", version="0.3.0", files={"huxley_sdk/__init__.py": ""}
    )
    line = refused(world.install("huxley-skill-newsdk"))
    assert line.startswith(
        'refused: huxley-skill-newsdk requires "huxley-sdk>=0.3", '
        "but the skills environment's base pins huxley-sdk==0.1.2+huxleyd"
    ), line


def test_a_native_package_past_its_python_marker_is_refused(guard: World) -> None:
    world = guard
    demo_wheel(world.index, name="huxley-skill-native", requires=["fastmath"])
    build_wheel(
        world.index,
        name="fastmath",
        version="1.0",
        files={"fastmath/__init__.py": ""},
        requires_python=PAST,
        tag="py3-none-linux_x86_64",
    )
    assert refused(world.install("huxley-skill-native")) == (
        f"refused: fastmath 1.0 requires Python {PAST} (this is {THIS}) and is not pure "
        "Python, so it may really need it"
    )


def test_the_daemon_itself_is_not_a_skill_package(skills_world: World) -> None:
    for name in ("huxley-sdk", "huxleyd"):
        assert refused(skills_world.install(name)) == (
            f"refused: {name} is part of the daemon, not a skill package"
        )


def test_without_our_sdk_distribution_nothing_is_installed(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv", with_sdk=False)
    world = World(python, tmp_path / "skills-env", tmp_path / "index")
    line = refused(world.install("huxley-skill-demo"))
    assert "huxley_sdk: no huxley-sdk distribution in " in line
    assert line.endswith("; nothing was installed")
    assert not world.skills.exists()


def test_install_published_reminders(guard: World) -> None:
    """The real huxley-skill-reminders wheel from PyPI (cached), installed offline."""
    cache = fetch_dists(
        ["huxley-skill-reminders==0.1.0", "python-dateutil==2.9.0.post0", "six==1.17.0"]
    )
    world = guard
    done = world.huxleyctl("skills", "install", "huxley-skill-reminders", *offline(cache))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(" (skills: reminders)")
    assert "  [skills.reminders]" in done.stdout.splitlines()
    imports = subprocess.run(
        [str(world.skills / "bin" / "python"), "-c", "import huxley_skill_reminders"],
        capture_output=True,
        text=True,
    )
    assert imports.returncode == 0, imports.stderr
    gone = world.huxleyctl("skills", "remove", "huxley-skill-reminders")
    assert gone.returncode == 0, gone.stderr
    assert "(and what its install added: python-dateutil, six)" in gone.stdout
