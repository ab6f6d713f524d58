"""A wrong ``--config`` path is named as missing, not "huxleyd is not running".

Run as an admin runs it: ``huxleyctl`` in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def huxleyctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "huxleyd.control.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_config_path_that_does_not_exist_is_named(tmp_path: Path) -> None:
    typo = tmp_path / "huxleyd.tmol"
    done = huxleyctl("--config", str(typo), "status")
    assert done.returncode == 2, done.stderr
    assert f"--config {typo}: no such file" in done.stderr
    assert "not running" not in done.stderr


def test_a_config_path_that_is_a_folder_is_named(tmp_path: Path) -> None:
    done = huxleyctl("--config", str(tmp_path), "status")
    assert done.returncode == 2 and f"--config {tmp_path}: not a file" in done.stderr
