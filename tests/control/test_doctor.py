"""Doctor checks against real files, directories and TCP ports."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from huxleyd.clock import ManualClock
from huxleyd.control.doctor import (
    check_audio_device,
    check_config,
    check_disk_space,
    check_gpio_pins,
    check_key_file,
    check_mixer_control,
    check_provider_reachable,
    run_checks,
)
from huxleyd.control.handler import DoctorCheck

PERSONA = 'name = "Test"\ntimezone = "Europe/Madrid"\n[skills.system]\n'
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def write_config(tmp_path: Path, body: str) -> Path:
    (tmp_path / "personas").mkdir(exist_ok=True)
    (tmp_path / "personas" / "default.toml").write_text(PERSONA)
    path = tmp_path / "huxleyd.toml"
    path.write_text(body)
    return path


def test_config_valid(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[audio]\nperiod_ms = 20\n")
    check = check_config(path)
    assert check.ok and check.name == "config"
    assert str(path) in check.detail and "'Test'" in check.detail


def test_config_invalid_names_the_key_and_the_fix(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[audio]\nperiod_ms = 2000\n")
    check = check_config(path)
    assert not check.ok
    assert "audio.period_ms" in check.detail and "between" in check.detail
    assert f"huxleyd --check-config --config {path}" in check.fix


def test_config_missing(tmp_path: Path) -> None:
    check = check_config(tmp_path / "nope.toml")
    assert not check.ok and "file not found" in check.detail


@pytest.fixture
def key_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "openai.key"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    yield path


def test_key_file_private_and_readable(key_file: Path) -> None:
    check = check_key_file(key_file)
    assert check == DoctorCheck("key file", True, f"{key_file} is readable and private (mode 0600)")


def test_key_file_readable_by_others(key_file: Path) -> None:
    key_file.chmod(0o644)
    check = check_key_file(key_file)
    assert not check.ok and "mode 0644" in check.detail
    assert check.fix == f"chmod 600 {key_file}"
    assert SECRET not in check.detail + check.fix


def test_key_file_missing_empty_or_a_directory(tmp_path: Path) -> None:
    missing = check_key_file(tmp_path / "none.key")
    assert not missing.ok and "does not exist" in missing.detail
    empty = tmp_path / "empty.key"
    empty.write_text("  \n")
    empty.chmod(0o600)
    assert "is empty" in check_key_file(empty).detail
    assert not check_key_file(tmp_path).ok


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_key_file_unreadable(key_file: Path) -> None:
    key_file.chmod(0o000)
    check = check_key_file(key_file)
    assert not check.ok and "not readable" in check.detail


def test_no_key_file_means_the_simulator() -> None:
    check = check_key_file(None)
    assert check.ok and "simulator (not an AI)" in check.detail
    assert "provider.key_file" in check.fix


def test_audio_device_probe() -> None:
    assert check_audio_device("audio output", lambda: "hw:1,0 at 48000 Hz") == DoctorCheck(
        "audio output", True, "hw:1,0 at 48000 Hz"
    )

    def busy() -> None:
        raise OSError("[Errno -9985] Device unavailable:\n  hw:1,0")

    check = check_audio_device("audio input", busy)
    assert not check.ok and check.detail == "[Errno -9985] Device unavailable: hw:1,0"
    assert "arecord -L" in check.fix


def test_mixer_control() -> None:
    assert check_mixer_control("Speaker", lambda: None).detail == "mixer control 'Speaker' found"

    def missing() -> None:
        raise LookupError("no simple control 'Speaker' on card 1 (have: PCM, Mic)")

    check = check_mixer_control("Speaker", missing)
    assert not check.ok and "have: PCM, Mic" in check.detail and "'Speaker'" in check.fix
    assert check_mixer_control(None, missing).ok  # software gain: nothing to probe


def test_gpio_pins() -> None:
    held = {17}

    def claim(pin: int) -> None:
        if pin in held:
            raise RuntimeError("GPIO busy")

    ok = check_gpio_pins({"led": 12}, claim)
    assert ok == DoctorCheck("gpio", True, "free: GPIO12 (led)")
    bad = check_gpio_pins({"button": 17, "led": 12}, claim)
    assert not bad.ok and bad.detail == "GPIO17 (button): GPIO busy"
    assert "gpioinfo" in bad.fix


def test_provider_reachable_on_a_listening_port() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        check = check_provider_reachable(
            f"ws://127.0.0.1:{port}/v1/realtime", timeout_s=2.0, clock=ManualClock()
        )
    assert check == DoctorCheck("provider", True, f"127.0.0.1:{port} accepts connections (0 ms)")


def test_provider_unreachable_on_a_closed_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connect is refused
        check = check_provider_reachable(f"ws://127.0.0.1:{port}", timeout_s=2.0)
    assert not check.ok
    assert check.detail == f"cannot connect to 127.0.0.1:{port}: Connection refused"
    assert "network" in check.fix


@pytest.mark.parametrize("url", ["not a url", "wss:///v1/realtime", "ftp://host/x", "ws://h:99999"])
def test_provider_url_without_host_or_port(url: str) -> None:
    check = check_provider_reachable(url)
    assert not check.ok and "has no host or port" in check.detail


def test_disk_space(tmp_path: Path) -> None:
    assert check_disk_space(tmp_path, min_free_bytes=1).ok
    low = check_disk_space(tmp_path, min_free_bytes=1 << 62)
    assert not low.ok and "MB free" in low.detail and "want ≥" in low.detail
    gone = check_disk_space(tmp_path / "missing")
    assert not gone.ok and "does not exist" in gone.detail and "StateDirectory=" in gone.fix


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_disk_not_writable(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        check = check_disk_space(tmp_path, min_free_bytes=1)
    finally:
        tmp_path.chmod(0o700)
    assert not check.ok and "not writable" in check.detail


async def test_run_checks_keeps_order_and_reports_a_crashing_check(tmp_path: Path) -> None:
    def check_broken() -> DoctorCheck:
        raise ZeroDivisionError("division by zero")

    results = await run_checks(
        [
            partial(check_key_file, None),
            check_broken,
            partial(check_disk_space, tmp_path, min_free_bytes=1),
        ]
    )
    assert [c.name for c in results] == ["key file", "broken", "disk"]
    assert [c.ok for c in results] == [True, False, True]
    assert results[1].detail == "the check itself failed: division by zero"
