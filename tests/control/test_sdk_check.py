"""Huxley's own huxley-sdk in our SDK's place: every entry point says so in one line.

The real huxley-sdk 0.1.1 wheel from PyPI (cached) is installed by hand
into a throwaway venv running this checkout, as ``pip install
huxley-sdk==0.1.1`` would on a device.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.fakes.wheels import (
    ROOT,
    build_wheel,
    cached_wheel,
    daemon_venv,
    fetch_dists,
    write_check_config,
)

HUXLEY_SDK = "huxley-sdk==0.1.1"


@pytest.fixture(scope="module")
def foreign_sdk_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel = cached_wheel(fetch_dists([HUXLEY_SDK]), HUXLEY_SDK)
    python = daemon_venv(tmp_path_factory.mktemp("foreign") / "venv")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--ignore-requires-python",
            str(wheel),
        ],
        check=True,
    )
    return python


def run(python: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *argv], capture_output=True, text=True, timeout=120)


def expected_line(python: Path) -> str:
    venv = python.parent.parent
    return (
        f"huxley_sdk is huxley-sdk 0.1.1 in {venv}, not huxleyd's (huxley-sdk *+huxleyd); "
        f"repair: make -C {ROOT} setup"
    )


def test_huxleyd_and_check_config_say_it_in_one_line(
    foreign_sdk_venv: Path, tmp_path: Path
) -> None:
    config = write_check_config(tmp_path, "")
    for extra in ([], ["--check-config"]):
        done = run(foreign_sdk_venv, "-m", "huxleyd", "--config", str(config), *extra)
        assert done.returncode == 1
        assert done.stderr.splitlines() == [f"huxleyd: {expected_line(foreign_sdk_venv)}"]


def test_huxleyctl_says_it_and_refuses_to_install(foreign_sdk_venv: Path) -> None:
    status = run(
        foreign_sdk_venv, "-m", "huxleyd.control.cli", "--socket", "/nonexistent", "status"
    )
    assert status.stderr.splitlines()[0] == f"huxleyctl: {expected_line(foreign_sdk_venv)}"
    install = run(foreign_sdk_venv, "-m", "huxleyd.control.cli", "skills", "install", "x")
    assert install.returncode == 1
    assert install.stderr.splitlines() == [
        f"huxleyctl: skills install: {expected_line(foreign_sdk_venv)}; nothing was installed"
    ]


def test_doctor_fails_the_sdk_check(foreign_sdk_venv: Path, tmp_path: Path) -> None:
    config = write_check_config(tmp_path, "")
    done = run(
        foreign_sdk_venv,
        "-m",
        "huxleyd.control.cli",
        "--config",
        str(config),
        "--socket",
        str(tmp_path / "none.sock"),
        "doctor",
    )
    assert done.returncode == 1
    what, _, fix = expected_line(foreign_sdk_venv).partition("; repair: ")
    assert f"✗ sdk: {what}  → {fix}" in done.stdout.splitlines()


def test_make_setup_notices_and_reinstalls(foreign_sdk_venv: Path) -> None:
    venv = foreign_sdk_venv.parent.parent
    (venv / ".installed").touch()
    plan = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "setup", f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"{venv}/bin/python -m pip install --quiet -e sdk" in plan.stdout


def test_make_setup_leaves_a_good_venv_alone(tmp_path: Path) -> None:
    python = daemon_venv(tmp_path / "venv")
    (tmp_path / "venv" / ".installed").touch()
    plan = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "setup", f"VENV={tmp_path / 'venv'}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run(python, "-m", "huxleyd.skillhost.sdkcheck").returncode == 0
    assert "pip install" not in plan.stdout


def test_a_shadowing_package_is_named_and_the_repair_repairs(tmp_path: Path) -> None:
    """A distribution that ships huxley_sdk/ into the daemon's own site-packages (found
    before ours): reinstalling the SDK would not remove it, so the repair names the
    uninstall, and running exactly that line makes every entry point whole again."""
    python = daemon_venv(tmp_path / "venv")
    shadow = build_wheel(
        tmp_path / "index",
        name="huxley-skill-shadow",
        version="1.0",
        files={"huxley_sdk/__init__.py": "SHADOW = True\n"},
    )
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", str(shadow)]
    subprocess.run(pip, check=True)
    broken = run(python, "-m", "huxleyd.skillhost.sdkcheck")
    assert broken.returncode == 1
    what, _, fix = broken.stderr.strip().partition("; repair: ")
    site = next((tmp_path / "venv").glob("lib/python3*/site-packages"))
    assert what == (
        f"huxley_sdk is imported from {site / 'huxley_sdk'}, which is huxley-skill-shadow's, "
        "not huxley-sdk's"
    )
    assert fix == f"{python} -m pip uninstall --yes huxley-skill-shadow"
    subprocess.run(shlex.split(fix), check=True, capture_output=True)
    assert run(python, "-m", "huxleyd.skillhost.sdkcheck").returncode == 0
    assert not (site / "huxley_sdk").exists()
