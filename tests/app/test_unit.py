"""The systemd files: the unit says what the daemon relies on, passes
``systemd-analyze verify``, and its security exposure stays "OK" or better;
sysusers and tmpfiles build the user, groups and directories in a scratch root."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "huxleyd.service"
ANALYZE = shutil.which("systemd-analyze")


def _directives(text: str) -> dict[str, list[str]]:
    """``Key=value`` lines per key, in order (systemd allows repeats)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key, []).append(value)
    return out


def test_unit_states_the_contract() -> None:
    d = _directives(UNIT.read_text())
    expect = {
        "Type": ["notify"],
        "NotifyAccess": ["main"],
        "Restart": ["on-failure"],
        "User": ["huxley"],
        "StateDirectory": ["huxleyd"],
        "ConfigurationDirectory": ["huxleyd"],
        "RuntimeDirectory": ["huxleyd"],
        "LoadCredential": ["openai-key:/etc/huxleyd/openai.key"],
        "ExecStart": ["/opt/huxleyd/venv/bin/huxleyd --config /etc/huxleyd/huxleyd.toml"],
        "NoNewPrivileges": ["yes"],
        "ProtectSystem": ["strict"],
        "ProtectHome": ["yes"],
        "PrivateTmp": ["yes"],
        "DevicePolicy": ["closed"],
        "CapabilityBoundingSet": [""],
        "RestrictAddressFamilies": ["AF_UNIX AF_INET AF_INET6 AF_NETLINK"],
        # The state (persona database, voice memos) is the daemon user's alone.
        "StateDirectoryMode": ["0700"],
        "UMask": ["0077"],
    }
    for key, values in expect.items():
        assert d.get(key) == values, key
    assert int(d["WatchdogSec"][0]) > 0
    assert set(d["SupplementaryGroups"][0].split()) == {"audio", "gpio", "spi"}
    assert "@system-service" in d["SystemCallFilter"]
    # The speaker's callback thread may be SCHED_FIFO, bounded in priority and time.
    assert d["RestrictRealtime"] == ["no"]
    assert 1 <= int(d["LimitRTPRIO"][0]) < 50
    assert "LimitRTTIME" in d
    assert "sched_setscheduler sched_setparam" in d["SystemCallFilter"]
    allowed = " ".join(d["DeviceAllow"])
    for device in ("char-alsa", "char-gpiochip", "char-spi", "/dev/gpiomem"):
        assert device in allowed
    assert not any("KEY" in v.upper() for v in d.get("Environment", []))


def _mib(value: str) -> int:
    number, unit = int(value[:-1]), value[-1]
    return number * {"K": 1, "M": 1024, "G": 1024 * 1024}[unit] // 1024


def test_a_runaway_skill_ends_in_a_restart() -> None:
    """Memory and tasks are bounded; the limits leave room above the measured soak."""
    d = _directives(UNIT.read_text())
    assert d["MemorySwapMax"] == ["0"]
    high, hard = _mib(d["MemoryHigh"][0]), _mib(d["MemoryMax"][0])
    measured_peak_mib = 58  # tests/e2e/test_soak_limits.py, as the unit's comment says
    assert 3 * measured_peak_mib <= high < hard <= 512 // 2
    assert 16 <= int(d["TasksMax"][0]) <= 128
    assert d["Restart"] == ["on-failure"]  # a cgroup OOM kill is a failure: restarted


def _verifiable_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at an executable that exists here.

    verify refuses a unit whose binary is missing, and /opt/huxleyd exists
    only on an installed machine; everything else is verified as shipped.
    """
    stub = tmp_path / "huxleyd"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    copy = tmp_path / "huxleyd.service"
    copy.write_text(UNIT.read_text().replace("/opt/huxleyd/venv/bin/huxleyd", str(stub)))
    return copy


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    assert ANALYZE is not None
    result = subprocess.run(
        [ANALYZE, "verify", str(_verifiable_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    complaints = [line for line in result.stderr.splitlines() if "huxleyd.service" in line]
    assert result.returncode == 0 and not complaints, result.stderr


def exposure(unit: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``systemd-analyze security``'s verdict on ``unit`` (PERFECT … UNSAFE), printed."""
    assert ANALYZE is not None
    result = subprocess.run(
        [ANALYZE, "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for \S+: ([\d.]+) (\w+)", result.stdout)
    assert match, result.stdout + result.stderr
    with capsys.disabled():
        print(f"\n{unit.name} exposure: {match.group(1)} {match.group(2)}")
    return match.group(2)


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_security_exposure_is_ok_or_better(capsys: pytest.CaptureFixture[str]) -> None:
    assert exposure(UNIT, capsys) in ("PERFECT", "SAFE", "OK")


@pytest.mark.skipif(
    shutil.which("systemd-sysusers") is None or shutil.which("systemd-tmpfiles") is None,
    reason="systemd-sysusers/systemd-tmpfiles are not installed",
)
@pytest.mark.skipif(os.geteuid() != 0, reason="tmpfiles needs root to chown in a scratch root")
def test_sysusers_and_tmpfiles_in_a_scratch_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    subprocess.run(
        ["systemd-sysusers", f"--root={tmp_path}", str(ROOT / "systemd/huxleyd.sysusers")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    groups = {
        line.split(":")[0]: line.split(":")[3].split(",")
        for line in (tmp_path / "etc/group").read_text().splitlines()
    }
    for group in ("audio", "gpio", "spi", "huxley-control"):
        assert "huxley" in groups[group], group
    assert groups["huxley-operator"] == [""]  # huxleyctl's groups: the admin adds people
    passwd = {
        line.split(":")[0]: line for line in (tmp_path / "etc/passwd").read_text().splitlines()
    }
    assert passwd["huxley"].endswith(":/var/lib/huxleyd:/usr/sbin/nologin")
    uid = int(passwd["huxley"].split(":")[2])

    subprocess.run(
        [
            "systemd-tmpfiles",
            f"--root={tmp_path}",
            "--create",
            str(ROOT / "systemd/huxleyd.tmpfiles"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    state = (tmp_path / "var/lib/huxleyd").stat()
    assert (stat.S_IMODE(state.st_mode), state.st_uid) == (0o700, uid)
    key = (tmp_path / "etc/huxleyd/openai.key").stat()
    assert (stat.S_IMODE(key.st_mode), key.st_uid, key.st_size) == (0o600, 0, 0)


def test_a_bad_config_is_not_restarted_and_a_crash_never_leaves_it_failed() -> None:
    from huxleyd.app.main import EX_CONFIG

    d = _directives(UNIT.read_text())
    assert d["RestartPreventExitStatus"] == [str(EX_CONFIG)]
    # Only a configuration error may leave the unit down (issue 22): a crash
    # loop is slowed down, never ended.
    assert d["StartLimitIntervalSec"] == ["0"]
    assert int(d["RestartSec"][0]) >= 5


def test_the_daemon_exits_with_the_config_status_on_a_bad_config(tmp_path: Path) -> None:
    import subprocess
    import sys

    from huxleyd.app.main import EX_CONFIG

    bad = tmp_path / "huxleyd.toml"
    bad.write_text("[daemon]\nlog_level = 'LOUD'\n")
    run = subprocess.run(
        [sys.executable, "-m", "huxleyd", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == EX_CONFIG, run.stderr
    assert "log_level" in run.stderr
    check = subprocess.run(
        [sys.executable, "-m", "huxleyd", "--config", str(bad), "--check-config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == EX_CONFIG, "--check-config says what the start says"
