"""The reboot-for-updates policy (control/reboot.py): its pure parts, the status
report it reads, what ``status`` and ``doctor`` show, and the persona key."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from huxleyd.config.control_socket import ControlSettings
from huxleyd.config.load import load_persona
from huxleyd.control.handler import UNKNOWN_BUSY, StatusReport
from huxleyd.control.reboot import (
    ALERT_MARGIN_S,
    busy_reasons,
    check_reboot,
    cmd_reboot_if_idle,
    decide,
    reboot_if_idle,
)
from huxleyd.control.render import status_table
from huxleyd.errors import ConfigError
from huxleyd.turns.news import Activity


def report(**changes: object) -> StatusReport:
    base: dict[str, object] = {
        "state": "idle",
        "provider_state": "connected",
        "media": None,
        "volume": 50,
        "uptime_s": 10.0,
        "persona": "Test",
        "provider_kind": "openai",
        "is_simulator": False,
    }
    return StatusReport(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("activity", "reason"),
    [
        ("listening", "listening to the user"),
        ("thinking", "in a turn (waiting for the answer)"),
        ("speaking", "speaking"),
        ("media", "playing media"),
        ("call", "a skill holds the microphone"),
        ("starting", "the daemon is starting"),
        ("something new", "busy (something new)"),
    ],
)
def test_every_activity_but_idle_is_a_reason(activity: str, reason: str) -> None:
    assert busy_reasons(activity, None) == (reason,)


@pytest.mark.parametrize("activity", list(Activity))
def test_each_activity_is_idle_or_a_named_reason(activity: Activity) -> None:
    """Every state ``status`` can report: idle and muted (nothing listens, plays
    or is due: the mute is saved and outlives the reboot) are no reason to
    wait; any other has its own words, not the catch-all for a state the
    policy never heard of."""
    reasons = busy_reasons(activity, None)
    if activity in (Activity.IDLE, Activity.MUTED):
        assert reasons == ()
    else:
        assert len(reasons) == 1 and not reasons[0].startswith("busy ("), reasons


def test_a_muted_device_still_waits_for_a_due_alert() -> None:
    assert busy_reasons(Activity.MUTED, 20.0) == ("a timer or reminder is due in 1 min",)


def test_an_alert_within_the_margin_is_a_reason_and_one_after_is_not() -> None:
    assert busy_reasons("idle", None) == ()
    assert busy_reasons("idle", ALERT_MARGIN_S + 1) == ()
    assert busy_reasons("idle", ALERT_MARGIN_S) == ("a timer or reminder is due in 10 min",)
    assert busy_reasons("idle", 20.0) == ("a timer or reminder is due in 1 min",)
    assert busy_reasons("idle", -5.0) == ("a timer or reminder is due now",)
    assert busy_reasons("media", 0.0) == ("playing media", "a timer or reminder is due now")


def test_decide_reboots_only_idle_and_allowed() -> None:
    assert decide(report()).reboot
    busy = decide(report(busy=("speaking",)))
    assert not busy.reboot and busy.why == "speaking"
    never = decide(report(reboot_policy="never"))
    assert not never.reboot and '[updates] reboot = "never"' in never.why


def test_an_older_daemon_that_says_nothing_is_never_taken_for_idle() -> None:
    old = report().to_dict()
    for key in ("busy", "reboot_pending", "reboot_policy"):
        del old[key]
    read = StatusReport.from_dict(old)
    assert read.busy == (UNKNOWN_BUSY,) and read.reboot_policy == "unknown"
    assert not decide(read).reboot
    assert not decide(dataclasses.replace(read, reboot_policy="when_idle")).reboot
    assert StatusReport.from_dict(report(busy=("x",)).to_dict()) == report(busy=("x",))


def test_reboot_if_idle_says_one_line_per_outcome(tmp_path: Path) -> None:
    flag = tmp_path / "reboot-required"
    lines: list[str] = []
    reboots: list[int] = []
    assert not reboot_if_idle(report, lambda: reboots.append(1), flag=flag, say=lines.append)
    flag.touch()
    busy = report(busy=("playing media",))
    assert not reboot_if_idle(lambda: busy, lambda: reboots.append(1), flag=flag, say=lines.append)
    assert reboot_if_idle(report, lambda: reboots.append(1), flag=flag, say=lines.append)
    assert lines == [
        "no reboot needed",
        "reboot needed, waiting: playing media",
        "rebooting for security updates",
    ]
    assert reboots == [1]


def test_a_failing_reboot_command_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = tmp_path / "reboot-required"
    flag.touch()

    def fails() -> None:
        raise subprocess.CalledProcessError(1, ["systemctl", "reboot"])

    monkeypatch.setattr("huxleyd.control.client.ControlClient.status", lambda self: report())
    monkeypatch.setattr("huxleyd.control.client.ControlClient.connect", lambda self: None)
    control = ControlSettings(socket_path=tmp_path / "sock", socket_group="")
    assert cmd_reboot_if_idle(control, timeout_s=1.0, flag=flag, reboot=fails) == 1
    assert "the reboot failed" in capsys.readouterr().err


def test_doctor_and_status_show_a_pending_reboot(tmp_path: Path) -> None:
    flag = tmp_path / "reboot-required"
    assert check_reboot("when_idle", flag=flag).status == "ok"
    flag.touch()
    allowed = check_reboot("when_idle", flag=flag)
    assert allowed.status == "warn" and "reboots itself when idle" in allowed.detail
    never = check_reboot("never", flag=flag)
    assert never.status == "warn" and "reboot by hand" in never.detail
    console = Console(width=200, record=True)
    console.print(status_table(report(reboot_pending=True, busy=("speaking",))))
    assert "reboots itself when idle, 02:00-06:00; waiting: speaking" in console.export_text()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[updates]\nreboot = "sometimes"', "updates.reboot: expected one of 'when_idle', 'never'"),
        ('[updates]\nreboots = "never"', "updates.reboots: unknown key"),
        ("updates = 1", "updates: expected a table"),
    ],
)
def test_the_persona_key_is_checked_naming_it(tmp_path: Path, table: str, message: str) -> None:
    persona = tmp_path / "p.toml"
    persona.write_text(f'name = "P"\ntimezone = "UTC"\n{table}\n')
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_persona(persona)


def test_the_persona_default_allows_reboots_when_idle(tmp_path: Path) -> None:
    persona = tmp_path / "p.toml"
    persona.write_text('name = "P"\ntimezone = "UTC"\n')
    assert load_persona(persona).updates.reboot == "when_idle"
