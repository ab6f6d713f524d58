"""A device whose first boot could not apply the setup file says so; it
never answers from the simulator as if it were set up (issue 27, item 5).

The real daemon process, started as the image's unit starts it: the
provider is OpenAI, there is no key (the setup never wrote one), and
HUXLEYD_SETUP_FAILED_FILE names first boot's failure report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.config.setupreport import SETUP_FAILED_ENV, setup_failure
from tests.e2e.process import DaemonProcess, write_daemon_config

WHY = "huxleyd-setup.toml: the setting wifi.country: expected the two-letter country code"


def ctl(socket: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "huxleyd.control.cli", "--socket", str(socket), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def failed_daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    config = write_daemon_config(tmp_path, scenario='name = "t"\n')
    text = config.read_text().replace('kind = "sim"', 'kind = "openai"')
    text = "\n".join(line for line in text.splitlines() if not line.startswith("sim_"))
    config.write_text(text + "\n")
    report = tmp_path / "run/huxleyd-firstboot/failed"
    report.parent.mkdir(parents=True)
    report.write_text(WHY + "\n")
    daemon = DaemonProcess(config, env={SETUP_FAILED_ENV: str(report), "OPENAI_API_KEY": ""})
    try:
        daemon.wait_for_log("daemon_started", timeout_s=120)
        yield daemon
    finally:
        daemon.terminate()


def test_status_say_and_press_say_setup_failed_never_the_simulator(
    failed_daemon: DaemonProcess,
) -> None:
    socket = failed_daemon.socket
    report = json.loads(ctl(socket, "status", "--json").stdout)
    assert report["is_simulator"] is False
    assert report["provider_state"] == "setup_failed"
    assert report["provider_detail"] == f"setup failed: {WHY}"
    status = ctl(socket, "status")
    assert "setup failed: huxleyd-setup.toml: the setting wifi.country" in status.stdout
    assert "simulator" not in status.stdout

    said = ctl(socket, "say", "what time is it")
    assert said.returncode != 0 and "setup failed:" in said.stderr

    for _ in range(2):  # on each press
        assert ctl(socket, "ptt", "tap").returncode == 0
    failed_daemon.wait_for_log("press_while_setup_failed")
    output = failed_daemon.output()
    assert output.count("press_while_setup_failed") >= 1
    assert "simulator_mode" not in output and "setup_failed" in output


def test_no_report_is_no_failure_and_an_unreadable_one_is(tmp_path: Path) -> None:
    assert setup_failure({}) is None
    assert setup_failure({SETUP_FAILED_ENV: str(tmp_path / "absent")}) is None
    (tmp_path / "dir").mkdir()
    why = setup_failure({SETUP_FAILED_ENV: str(tmp_path / "dir")})
    assert why is not None and why.startswith("setup failed: ") and "cannot be read" in why
    (tmp_path / "long").write_text("x" * 1000 + "\nsecond line\n")
    long = setup_failure({SETUP_FAILED_ENV: str(tmp_path / "long")})
    assert long is not None and len(long) < 330 and "second" not in long


async def test_the_leds_show_the_error_pattern_and_keep_it_across_presses(tmp_path: Path) -> None:
    """First boot no longer blinks for 20 s (it held up the boot); the daemon
    shows the error pattern for as long as the setup is failed."""
    from gpiozero.pins.mock import MockFactory, MockPWMPin

    from huxleyd.app.parts import Overrides
    from huxleyd.app.runtime import Runtime
    from huxleyd.audio.backends.wav_backend import WavBackend
    from huxleyd.config.load import load_config
    from huxleyd.hardware.led_patterns import LedState
    from tests.e2e.harness import write_config
    from tests.fakes.notify import RecordingNotifier

    report = tmp_path / "failed"
    report.write_text(WHY + "\n")
    config = load_config(write_config(tmp_path, skills=("system",)))
    pins = MockFactory(pin_class=MockPWMPin)
    notifier = RecordingNotifier()
    runtime = Runtime(
        config,
        Overrides(
            backend=WavBackend(),
            pin_factory=pins,
            notifier=notifier,
            env={SETUP_FAILED_ENV: str(report)},
        ),
    )
    try:
        await runtime.start()
        leds = runtime.parts.leds
        assert leds.state is LedState.ERROR
        assert not runtime.is_simulator
        for _ in range(2):
            runtime.parts.coordinator.press()
            runtime.parts.coordinator.release()
            assert leds.state is LedState.ERROR
        ready = [m for m in notifier.sent if m.get("READY") == "1"]
        assert ready and ready[-1]["STATUS"] == f"setup failed: {WHY}"
    finally:
        await runtime.close()
        pins.close()
