"""The image recipe, checked cheaply (the full build takes an hour and never
runs in `make test`): every Debian package name resolves for arm64, and
every script of the recipe parses."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = [
    *sorted((REPO / "image").glob("*.sh")),
    *sorted((REPO / "image/kernel-test").glob("*.sh")),
    *sorted((REPO / "image/nortc-test").glob("*.sh")),
    REPO / "image/rootfs/etc/kernel/postinst.d/z60-huxleyd-devicetree",
    REPO / "image/rootfs/etc/initramfs/post-update.d/z60-huxleyd-devicetree",
    REPO / "image/rootfs/usr/lib/huxleyd-image/growroot",
]
SKIPPED = 77


def test_packages_resolve_in_the_arm64_archive() -> None:
    result = subprocess.run(
        ["sh", str(REPO / "image/check-packages.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode == SKIPPED:
        pytest.skip(result.stderr.strip().splitlines()[0])
    assert result.returncode == 0, result.stderr
    assert "packages resolve for arm64" in result.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_parse(script: Path) -> None:
    shell = "bash" if script.read_text().startswith("#!/bin/bash") else "sh"
    result = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    if shutil.which("shellcheck"):
        lint = subprocess.run(
            ["shellcheck", "-S", "warning", str(script)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert lint.returncode == 0, lint.stdout


def test_every_package_line_is_a_name() -> None:
    names = [
        line
        for line in (REPO / "image/packages.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert names and all(
        n.replace("-", "").replace(".", "").replace("+", "").isalnum() for n in names
    )
    assert len(names) == len(set(names)), "a package is listed twice"
