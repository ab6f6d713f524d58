"""The daemon as an admin meets it: a process, huxleyctl, sd_notify.

Runs ``python -m huxleyd`` in a temporary directory (WAV backend,
mock pins, the simulator), talks to it with ``huxleyctl`` as a subprocess,
and listens on a NOTIFY_SOCKET like systemd would.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.process import DaemonProcess, write_daemon_config

SCENARIO = (
    'name = "t"\n[[turns]]\nhear = "hello"\n[[turns.responses]]\nsay = "hi"\n'
    "tone_hz = 440.0\nduration_ms = 300\n"
)


class Daemon:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(tmp / "notify.sock"))
        self.notify.settimeout(0.2)
        self.messages: list[str] = []
        config = write_daemon_config(tmp, scenario=SCENARIO)
        self.process = DaemonProcess(
            config, env={"NOTIFY_SOCKET": str(tmp / "notify.sock"), "WATCHDOG_USEC": "1000000"}
        )
        self.proc = self.process.proc
        self.socket = self.process.socket

    def wait_for(self, text: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in m for m in self.messages):
                return
            try:
                self.messages.append(self.notify.recv(4096).decode())
            except TimeoutError:
                assert self.proc.poll() is None, self.output()
        raise AssertionError(f"no {text!r} from sd_notify; got {self.messages}")

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "huxleyd.control.cli", "--socket", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
        )

    def output(self) -> str:
        return self.process.output()

    def stop(self) -> int:
        try:
            return self.process.terminate(timeout_s=20)
        finally:
            self.notify.close()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path)
    try:
        d.wait_for("READY=1")
        yield d
    finally:
        d.stop()


def test_ready_status_and_watchdog_reach_systemd(daemon: Daemon) -> None:
    daemon.wait_for("WATCHDOG=1")
    assert any(m.startswith("STATUS=") or "\nSTATUS=" in m for m in daemon.messages)
    ready = next(m for m in daemon.messages if "READY=1" in m)
    assert "simulator" in ready


def test_huxleyctl_against_the_running_daemon(daemon: Daemon) -> None:
    status = daemon.ctl("status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["is_simulator"] is True and report["persona"] == "Test"
    assert report["provider_state"] == "connected" or report["provider_state"] == "connecting"

    assert daemon.ctl("volume", "30").returncode == 0
    got = daemon.ctl("volume")
    assert got.returncode == 0 and "30" in got.stdout
    assert daemon.ctl("volume", "130").returncode == 2  # argparse rejects it

    skills = daemon.ctl("skills", "--json")
    assert skills.returncode == 0
    listed = json.loads(skills.stdout)
    entries = listed["skills"] if isinstance(listed, dict) else listed
    assert any(s["name"] == "system" and "set_volume" in s["tools"] for s in entries), listed

    say = daemon.ctl("say", "hello")
    assert say.returncode == 0, say.stderr
    assert say.stdout == "hi\n", "say prints what the assistant said"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        report = json.loads(daemon.ctl("status", "--json").stdout)
        if report["last_turn_id"] is not None:
            break
        time.sleep(0.1)
    assert report["last_turn_id"] is not None, report
    assert "commit_to_first_audio_ms" in report["last_turn_timings_ms"]

    assert daemon.ctl("ptt", "tap").returncode == 0
    assert daemon.ctl("stop").returncode == 0
    levels = daemon.ctl("levels", "--seconds", "0.3")
    assert levels.returncode == 0, levels.stderr
    doctor = daemon.ctl("doctor", "--json")
    listed = json.loads(doctor.stdout)
    checks = {c["name"]: c for c in (listed["checks"] if isinstance(listed, dict) else listed)}
    assert checks["config"]["ok"] and checks["audio"]["ok"], checks
    assert daemon.ctl("fly").returncode == 2
    assert daemon.ctl("ptt", "wiggle").returncode == 2


def test_without_a_journal_the_daemon_keeps_its_own_log_and_huxleyctl_reads_it(
    daemon: Daemon,
) -> None:
    log = daemon.tmp / "state" / "huxleyd.log"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and "daemon_started" not in _text(log):
        time.sleep(0.1)
    assert "daemon_started" in _text(log)
    config = daemon.tmp / "huxleyd.toml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "huxleyd.control.cli",
            "--config",
            str(config),
            "logs",
            "--no-follow",
            "HUXLEY_EVENT=daemon_started",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": str(daemon.tmp)},  # no journalctl
    )
    assert done.returncode == 0, done.stderr
    assert "daemon_started" in done.stdout
    # started by hand, it ends its start-up with how to drive it
    while time.monotonic() < deadline and "huxleyd is ready" not in daemon.output():
        time.sleep(0.1)
    out = daemon.output()
    assert "huxleyd is ready, talking to the built-in simulator" in out
    assert f"--config {config} watch" in out
    assert "state/huxleyd.log" in out


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_sigterm_stops_cleanly(daemon: Daemon) -> None:
    daemon.wait_for("WATCHDOG=1")
    daemon.proc.send_signal(signal.SIGTERM)
    daemon.wait_for("STOPPING=1")
    assert daemon.stop() == 0, daemon.output()
    assert "daemon_stopped" in daemon.output()
    assert not daemon.socket.exists(), "the control socket is removed"
    assert daemon.ctl("status").returncode == 3  # not running


def test_sighup_reloads_the_persona(daemon: Daemon) -> None:
    persona = daemon.tmp / "personas" / "default.toml"
    persona.write_text(persona.read_text().replace("Be brief.", "Be kind."))
    daemon.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 20
    while "persona_reloaded" not in daemon.output():
        assert time.monotonic() < deadline, daemon.output()
        assert daemon.proc.poll() is None, daemon.output()
        time.sleep(0.05)
    assert daemon.proc.poll() is None  # SIGHUP's default would have killed it


def test_a_second_instance_stops_before_it_starts_anything(daemon: Daemon) -> None:
    from tests.e2e.process import DaemonProcess

    second = DaemonProcess(daemon.tmp / "huxleyd.toml", log=daemon.tmp / "second.log")
    try:
        status = second.proc.wait(timeout=60)
    finally:
        second.kill()
    out = second.output()
    assert status == 1, out
    assert "another huxleyd is running on the state directory" in out  # its lock
    assert "daemon_started" not in out, "it found the first one before starting"
    assert daemon.ctl("status").returncode == 0, "the first one is untouched"


async def test_status_answers_while_the_daemon_starts(tmp_path: Path) -> None:
    """The control socket is up before the runtime: status must not fail then."""
    from huxleyd.app.control import RuntimeControl
    from huxleyd.app.runtime import Runtime
    from huxleyd.config.load import load_config

    config = load_config(write_daemon_config(tmp_path, scenario=SCENARIO))
    report = await RuntimeControl(Runtime(config)).status()
    assert report.state == "starting" and report.volume == -1
    assert report.provider_state == "connecting"
