"""The skill host's systemd units: what the daemon's side relies on, verified and safe.

``huxleyd-skillhost.socket`` is where :mod:`huxleyd.skillhost.activated`
connects, and only the daemon's user may; ``huxleyd-skillhost@.service``
runs hostexec as the skill user, on the environment ``huxleyctl skills``
installs into, with a watchdog the host pings, and cannot see the key or
the daemon's state. One path each, read from the units, not a second list.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from huxleyd.skillhost.activated import SOCKET
from huxleyd.skillhost.launchers import SKILL_USER
from huxleyd.skillhost.skillenv import INSTALLED_ROOT
from tests.app.test_unit import ANALYZE, _directives, exposure

ROOT = Path(__file__).resolve().parents[2]
SOCKET_UNIT = ROOT / "systemd" / "huxleyd-skillhost.socket"
SERVICE_UNIT = ROOT / "systemd" / "huxleyd-skillhost@.service"
DAEMON_UNIT = ROOT / "systemd" / "huxleyd.service"


def test_the_socket_is_the_daemons_alone_and_where_the_daemon_looks() -> None:
    socket_unit = _directives(SOCKET_UNIT.read_text())
    assert socket_unit["ListenStream"] == [str(SOCKET)]
    daemon = _directives(DAEMON_UNIT.read_text())
    assert socket_unit["SocketUser"] == daemon["User"] == ["huxley"]
    assert socket_unit["SocketMode"] == ["0600"]
    assert socket_unit["Accept"] == ["yes"]
    assert "huxleyd-skillhost.socket" in daemon["Wants"][0].split()
    assert "huxleyd-skillhost.socket" in daemon["After"][0].split()


def test_the_host_unit_runs_hostexec_as_the_skill_user_without_the_daemons_files() -> None:
    unit = _directives(SERVICE_UNIT.read_text())
    python, *argv = unit["ExecStart"][0].split()
    assert python == "/opt/huxleyd/venv/bin/python"  # install.sh rewrites the prefix
    assert argv == ["-I", "-m", "huxleyd.skillhost.hostexec", str(INSTALLED_ROOT)]
    assert unit["User"] == unit["Group"] == [SKILL_USER]
    assert unit["StandardInput"] == unit["StandardOutput"] == ["socket"]
    hidden = unit["InaccessiblePaths"][0].split()
    for path in ("/etc/huxleyd", "/var/lib/huxleyd", "/run/huxleyd", "/run/credentials"):
        assert f"-{path}" in hidden
    assert unit["ReadWritePaths"] == [str(INSTALLED_ROOT.parent / "data")]
    assert unit["NoNewPrivileges"] == ["yes"] and unit["CapabilityBoundingSet"] == [""]
    # The host pings at half of it (huxley_skillhost.child.ping_watchdog), armed
    # only at its READY=1, once imported: a Type=simple unit armed it at the exec.
    assert unit["WatchdogSec"] == ["5"] and unit["NotifyAccess"] == ["main"]
    assert unit["Type"] == ["notify"] and unit["TimeoutStartSec"] == ["30"]


def _verifiable(tmp_path: Path) -> list[Path]:
    """Both units with ExecStart's interpreter one that exists here (verify checks it)."""
    copies = []
    for unit in (SOCKET_UNIT, SERVICE_UNIT):
        copy = tmp_path / unit.name
        copy.write_text(
            unit.read_text().replace("/opt/huxleyd/venv/bin/python", shutil.which("python3") or "")
        )
        copies.append(copy)
    return copies


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    assert ANALYZE is not None
    socket_copy, service_copy = _verifiable(tmp_path)
    instance = tmp_path / "huxleyd-skillhost@0.service"
    instance.symlink_to(service_copy)
    result = subprocess.run(
        [ANALYZE, "verify", str(socket_copy), str(instance)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    complaints = [line for line in result.stderr.splitlines() if "huxleyd-skillhost" in line]
    assert not complaints, result.stderr


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_the_host_units_exposure_is_ok_or_better(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, service_copy = _verifiable(tmp_path)
    instance = tmp_path / "huxleyd-skillhost@0.service"
    instance.symlink_to(service_copy)
    assert exposure(instance, capsys) in ("PERFECT", "SAFE", "OK")
