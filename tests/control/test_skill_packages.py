"""``huxleyctl skills install|remove``: real pip, a throwaway venv, a local index.

Every install runs offline (``--no-index --find-links`` a directory of wheels
built here, or the cached published ones); the command runs with the venv's
own interpreter, as an admin runs it from the daemon's venv.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fakes.wheels import build_wheel, daemon_venv, fetch_dists, write_check_config

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


def huxleyctl(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "huxleyd.control.cli", "skills", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def check_config(python: Path, tmp: Path, persona: str) -> subprocess.CompletedProcess[str]:
    config = write_check_config(tmp, persona)
    return subprocess.run(
        [str(python), "-m", "huxleyd", "--check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )


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


def test_install_check_config_and_remove(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv")
    demo_wheel(tmp_path / "index")
    done = huxleyctl(python, "install", "huxley-skill-demo", *offline(tmp_path / "index"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("installed huxley-skill-demo 0.1.0 into ")
    assert lines[0].endswith(" (skills: demo)")
    assert lines[1] == (
        "  pure Python, installed despite its marker: "
        f"huxley-skill-demo 0.1.0 (requires-python {PAST})"
    )
    assert lines[2:] == [
        "add to the persona file, then restart: systemctl restart huxleyd",
        "  [skills.demo]",
    ]
    ok = check_config(python, tmp_path, "[skills.demo]\n")
    assert ok.returncode == 0, ok.stderr
    assert "demo" in ok.stdout

    gone = huxleyctl(python, "remove", "huxley-skill-demo")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines()[1] == (
        "delete [skills.demo] from the persona file (or the daemon runs degraded without it), "
        "then: systemctl restart huxleyd"
    )
    missing = check_config(python, tmp_path, "[skills.demo]\n")
    # The start leaves it out and runs: the check says so in the same words.
    assert missing.returncode == 0, missing.stderr
    assert ": runs degraded (" in missing.stdout
    assert "  left out: skill:demo: " in missing.stdout
    assert "skill 'demo' is not installed" in missing.stdout


def test_a_skill_needing_another_sdk_is_refused(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv")
    index = tmp_path / "index"
    demo_wheel(index, requires=["huxley-sdk>=0.3"])
    build_wheel(index, name="huxley-sdk", version="0.3.0", files={"huxley_sdk/__init__.py": ""})
    refused = huxleyctl(python, "install", "huxley-skill-demo", *offline(index))
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        'huxleyctl: skills install: refused: huxley-skill-demo requires "huxley-sdk>=0.3", '
        "but the daemon pins huxley-sdk=="
    )
    site_has = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('huxley-sdk'))"],
        capture_output=True,
        text=True,
    )
    assert site_has.stdout.strip() != "0.3.0"  # ours is still there, untouched


def test_a_native_package_past_its_python_marker_is_refused(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv")
    index = tmp_path / "index"
    demo_wheel(index, requires=["huxley-sdk>=0.1.1,<0.2", "fastmath"])
    build_wheel(
        index,
        name="fastmath",
        version="1.0",
        files={"fastmath/__init__.py": ""},
        requires_python=PAST,
        tag="py3-none-linux_x86_64",
    )
    refused = huxleyctl(python, "install", "huxley-skill-demo", *offline(index))
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        f"refused: fastmath 1.0 requires Python {PAST} (this is {THIS}) and is not pure "
        "Python, so it may really need it"
    )
    assert "installed" not in refused.stdout


def test_the_daemon_itself_is_not_a_skill_package(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv")
    refused = huxleyctl(python, "install", "huxley-sdk")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "huxleyctl: skills install: refused: huxley-sdk is part of the daemon, not a skill package"
    )


def test_without_our_sdk_distribution_nothing_is_installed(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv", with_sdk=False)
    refused = huxleyctl(python, "install", "huxley-skill-demo")
    assert refused.returncode == 1
    assert "huxley_sdk: no huxley-sdk distribution in " in refused.stderr
    assert refused.stderr.strip().endswith("; nothing was installed")


def test_install_published_reminders_and_check_config(tmp_path: Path) -> None:
    """The real huxley-skill-reminders wheel from PyPI (cached), installed offline."""
    cache = fetch_dists(
        ["huxley-skill-reminders==0.1.0", "python-dateutil==2.9.0.post0", "six==1.17.0"]
    )
    python = daemon_venv(tmp_path / "venv")
    done = huxleyctl(python, "install", "huxley-skill-reminders", *offline(cache))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(" (skills: reminders)")
    assert "  [skills.reminders]" in done.stdout.splitlines()
    ok = check_config(python, tmp_path, "[skills.reminders]\n")
    assert ok.returncode == 0, ok.stderr
    assert "reminders" in ok.stdout
