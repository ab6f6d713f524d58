"""``huxleyctl logs``: the journal when it knows the unit, else the daemon's log file.

A journalctl that is a shell script on PATH stands in for the journal; the
log file is a real file the daemon's format, read and followed by a real
``huxleyctl`` process (and, for the filter, by :func:`cmd_logs` in this one).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from huxleyd.control.cli_logs import cmd_logs
from huxleyd.control.cli_parser import build_parser

from .threaded import huxleyctl

ROOT = Path(__file__).resolve().parents[2]


def test_logs_runs_journalctl(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_journalctl = bin_dir / "journalctl"
    fake_journalctl.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake_journalctl.chmod(0o755)
    done = huxleyctl("logs", "HUXLEY_TOOL=set_volume", env={"PATH": str(bin_dir)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "--unit",
        "huxleyd",
        "--since",
        "10 min ago",
        "--output",
        "short-iso",
        "--follow",
        "HUXLEY_TOOL=set_volume",
    ]
    once = huxleyctl("logs", "--no-follow", "--since", "today", env={"PATH": str(bin_dir)})
    assert "--follow" not in once.stdout.splitlines() and "today" in once.stdout


def test_logs_with_neither_journal_nor_log_file_says_where_it_looked(tmp_path: Path) -> None:
    done = huxleyctl("logs", "--config", str(tmp_path / "none.toml"), env={"PATH": str(tmp_path)})
    assert done.returncode == 1
    assert done.stderr.startswith("huxleyctl: no logs: journalctl not found")
    assert "none.toml" in done.stderr


def _config_with_log(tmp_path: Path) -> tuple[Path, Path]:
    state = tmp_path / "state"
    state.mkdir()
    config = tmp_path / "huxleyd.toml"
    config.write_text(f'[storage]\nstate_dir = "{state}"\n')
    log = state / "huxleyd.log"
    log.write_text(
        "2026-01-01 12:00:00 INFO huxleyd.daemon daemon_started version=0.1\n"
        "2026-01-01 12:00:05 INFO huxleyd.turns tool_called turn=t1 tool=set_volume\n"
        "2026-01-01 12:00:06 INFO huxleyd.turns tool_called turn=t1 tool=get_current_time\n"
    )
    return config, log


def _journal_without_the_unit(tmp_path: Path) -> Path:
    """A journalctl that knows nothing (prints nothing) and would follow forever."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    journalctl = bin_dir / "journalctl"
    journalctl.write_text('#!/bin/sh\ncase "$*" in *--follow*) sleep 3600;; esac\nexit 0\n')
    journalctl.chmod(0o755)
    return bin_dir


def test_logs_falls_back_to_the_daemons_log_file(tmp_path: Path) -> None:
    config, _log = _config_with_log(tmp_path)
    bin_dir = _journal_without_the_unit(tmp_path)
    done = huxleyctl(
        "logs", "--config", str(config), "--no-follow", env={"PATH": f"{bin_dir}:/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3 and "daemon_started" in done.stdout
    only = huxleyctl(
        "logs",
        "--config",
        str(config),
        "--no-follow",
        "HUXLEY_TOOL=set_volume",
        env={"PATH": str(bin_dir)},
    )
    assert only.stdout.splitlines() == [
        "2026-01-01 12:00:05 INFO huxleyd.turns tool_called turn=t1 tool=set_volume"
    ]


def test_logs_follows_the_log_file_as_it_grows(tmp_path: Path) -> None:
    config, log = _config_with_log(tmp_path)
    argv = [sys.executable, "-m", "huxleyd.control.cli", "logs", "--config", str(config)]
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PATH": str(tmp_path)},
    ) as follower:
        assert follower.stdout is not None
        try:
            for _ in range(3):
                assert follower.stdout.readline()  # what was there
            with log.open("a") as more:
                more.write("2026-01-01 12:01:00 INFO huxleyd.daemon daemon_stopping\n")
            assert "daemon_stopping" in follower.stdout.readline()
        finally:
            follower.terminate()


def test_the_log_file_is_filtered_by_the_journal_matches_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _log = _config_with_log(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))  # no journalctl at all
    args = build_parser().parse_args(
        ["logs", "--config", str(config), "--no-follow", "HUXLEY_EVENT=daemon_started"]
    )
    assert cmd_logs(args) == 0
    assert capsys.readouterr().out == (
        "2026-01-01 12:00:00 INFO huxleyd.daemon daemon_started version=0.1\n"
    )
