"""``huxleyd`` and ``python -m huxleyd`` start the daemon through the SDK
check: the same start, and one line (exit 1) when ``huxley_sdk`` is not ours."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd import start
from huxleyd.app.main import EX_CONFIG
from tests.config.test_check_config import write
from tests.fakes.root_logging import root_logging_kept

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def kept_logging() -> Iterator[None]:
    """The start installs its own log handler: put the test's back."""
    with root_logging_kept():
        yield


def test_python_m_huxleyd_runs_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path)
    monkeypatch.setattr(sys, "argv", ["huxleyd", "--check-config", "--config", str(path)])
    monkeypatch.delitem(sys.modules, "huxleyd.__main__", raising=False)
    with pytest.raises(SystemExit) as exited:
        import huxleyd.__main__  # noqa: F401 - importing it is running it
    out = capsys.readouterr()
    assert exited.value.code == 0, out
    assert ": runs (" in out.out + out.err and "board 'gpio-basic'" in out.out + out.err


def test_the_console_script_hands_a_bad_config_to_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, hardware='board = "respeaker-4mic"')
    assert start.main(["--check-config", "--config", str(path)]) == EX_CONFIG
    assert f"{path}: hardware.board: unknown board" in capsys.readouterr().err


def test_a_foreign_sdk_stops_the_start_with_one_line(tmp_path: Path) -> None:
    # Huxley's own huxley-sdk 0.1.1, found first on the path (as after a
    # `pip install huxley-sdk==0.1.1`): no +huxleyd label.
    dist = tmp_path / "shadow" / "huxley_sdk-0.1.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: huxley-sdk\nVersion: 0.1.1\n")
    done = subprocess.run(
        [sys.executable, "-m", "huxleyd", "--check-config", "--config", str(write(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "shadow")},
    )
    assert done.returncode == start.EXIT_BROKEN_SDK == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("huxleyd: huxley_sdk is huxley-sdk 0.1.1 in ")
    assert "not huxleyd's (huxley-sdk *+huxleyd); repair: make -C" in lines[0]
