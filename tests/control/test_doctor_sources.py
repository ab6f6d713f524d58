"""``huxleyctl doctor`` asks the running daemon, else checks the configuration
itself, and says which; a refusal is one line, not a traceback."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.doctor_cli import EXIT_FAILED, EXIT_OK, checks_without_daemon, run_doctor
from huxleyd.control.errors import CommandFailedError
from huxleyd.control.server import ControlServer
from tests.config.test_check_config import write
from tests.control.threaded import serve_in_thread
from tests.fakes.control_handler import FakeControlHandler
from tests.fakes.root_logging import root_logging_kept

SDK_AND_UNIT = ["sdk", "service"]


@pytest.fixture
def fake() -> FakeControlHandler:
    return FakeControlHandler()


@pytest.fixture
def settings(sock_path: Path) -> ControlSettings:
    return ControlSettings(socket_path=sock_path, socket_group=None)


@pytest.fixture
def daemon(fake: FakeControlHandler, settings: ControlSettings) -> Iterator[ControlServer]:
    # quiet: the server's thread logs while this test reads what doctor printed
    with root_logging_kept(quiet=True), serve_in_thread(fake, settings) as server:
        yield server


def doctor(
    config: Path, settings: ControlSettings, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any], str]:
    args = argparse.Namespace(config=config, json=True, timeout=10.0, key_file=None)
    rc = run_doctor(args, settings)
    out = capsys.readouterr()
    return rc, json.loads(out.out) if out.out else {}, out.err


def names(report: dict[str, Any]) -> list[str]:
    return [c["name"] for c in report["checks"]]


@pytest.mark.usefixtures("daemon")
def test_the_running_daemon_answers_for_itself(
    tmp_path: Path, settings: ControlSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, report, _ = doctor(write(tmp_path), settings, capsys)
    assert report["source"] == f"the running daemon ({settings.socket_path})"
    assert names(report) == ["config", "provider", *SDK_AND_UNIT]  # the daemon's, then ours
    assert rc == EXIT_FAILED  # its provider check failed


@pytest.mark.usefixtures("daemon")
def test_a_refusal_is_one_line(
    tmp_path: Path,
    fake: FakeControlHandler,
    settings: ControlSettings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake.fail["doctor"] = CommandFailedError("doctor needs group huxley-control")
    rc, report, err = doctor(write(tmp_path), settings, capsys)
    assert (rc, report) == (EXIT_FAILED, {})
    assert err.startswith("huxleyctl: doctor: ") and err.count("\n") == 1
    assert "huxley-control" in err


def test_without_a_daemon_the_configuration_is_checked_here(
    tmp_path: Path, settings: ControlSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, provider='kind = "sim"', hardware='pin_factory = "mock"')
    rc, report, _ = doctor(config, settings, capsys)
    assert report["source"].startswith(f"{config}, without the daemon (")
    assert names(report)[:3] == ["config", "service user", "key file"]
    assert names(report)[-2:] == SDK_AND_UNIT
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert rc == (EXIT_FAILED if failed else EXIT_OK), failed


def test_a_configuration_that_does_not_load_is_the_one_check(tmp_path: Path) -> None:
    config = write(tmp_path, extra="[audio]\nbackend = 3\n")
    (check,) = checks_without_daemon(config, None)
    assert (check.name, check.ok) == ("config", False)
    assert "audio.backend" in check.detail
    assert check.fix == f"edit it, then run: huxleyd --check-config --config {config}"
