"""Fault row 32 (docs/reliability.md). ``huxleyctl reboot-if-idle`` against the real daemon on the simulator: it reboots
for pending security updates only when the daemon's ``status`` says idle and the
persona allows it (control/reboot.py). The reboot command is a fake that counts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.reboot import cmd_reboot_if_idle
from huxleyd.control.server import ControlServer
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import Rig, scenario_skill_installed, until

SKILLS = ("system", "scenario", "timers")


class Reboots:
    """The injected reboot command: counts, reboots nothing."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


async def ask(rig: Rig, flag: Path, reboot: Reboots) -> None:
    """Run the command as the timer does, against the control socket as huxleyd's
    main serves it (a blocking client, so off the daemon's loop)."""
    async with ControlServer(RuntimeControl(rig.rt), rig.rt.config.control):
        control = ControlSettings(socket_path=rig.tmp / "control.sock", socket_group="")
        rc = await asyncio.to_thread(
            cmd_reboot_if_idle, control, timeout_s=10.0, flag=flag, reboot=reboot
        )
    assert rc == 0


def pending(tmp: Path) -> Path:
    flag = tmp / "reboot-required"
    flag.write_text("*** System restart required ***\n")
    return flag


async def test_idle_daemon_reboots_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flag, reboot = pending(tmp_path), Reboots()
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, reboot_flag=flag) as rig:
            report = await RuntimeControl(rig.rt).status()
            assert report.reboot_pending and report.busy == ()
            await ask(rig, flag, reboot)
    assert reboot.count == 1
    assert "rebooting for security updates" in capsys.readouterr().out


async def test_a_muted_idle_daemon_reboots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Muted (``huxleyctl mute on``, or a long silent hold) is idle: the mute is
    saved and holds after the reboot, and a device kept muted must still get
    its security reboots (seen in the image's VM test: it waited forever)."""
    flag, reboot = pending(tmp_path), Reboots()
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, reboot_flag=flag) as rig:
            rig.coordinator.set_muted(True)
            await until(lambda: rig.coordinator.activity == "muted", "muted")
            await ask(rig, flag, reboot)
    assert reboot.count == 1
    assert "rebooting for security updates" in capsys.readouterr().out


async def test_no_pending_reboot_does_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reboot = Reboots()
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS) as rig:
            await ask(rig, tmp_path / "no-reboot-required", reboot)
    assert reboot.count == 0
    assert "no reboot needed" in capsys.readouterr().out


async def test_a_held_turn_or_claim_makes_it_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag, reboot = pending(tmp_path), Reboots()
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, reboot_flag=flag) as rig:
            rig.rt.parts.button.press()
            await until(lambda: rig.coordinator.activity == "listening", "listening")
            await ask(rig, flag, reboot)
            rig.rt.parts.button.release()
            await until(rig.idle, "idle again")
            handle = await rig.skill("scenario").start_claim()
            await until(lambda: rig.coordinator.activity == "call", "claim held")
            await ask(rig, flag, reboot)
            handle.cancel()
    out = capsys.readouterr().out
    assert reboot.count == 0
    assert "reboot needed, waiting: listening to the user" in out
    assert "reboot needed, waiting: a skill holds the microphone" in out


async def test_a_timer_due_soon_makes_it_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag, reboot = pending(tmp_path), Reboots()
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, reboot_flag=flag) as rig:
            await rig.skill("timers").handle("set_timer", {"seconds": 180, "label": "pasta"})
            await ask(rig, flag, reboot)
    assert reboot.count == 0
    assert "reboot needed, waiting: a timer or reminder is due in 3 min" in capsys.readouterr().out


async def test_a_persona_that_says_never_makes_it_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag, reboot = pending(tmp_path), Reboots()
    never = '[updates]\nreboot = "never"'
    with scenario_skill_installed(tmp_path):
        async with Rig(
            tmp_path, Scenario(turns=()), skills=SKILLS, reboot_flag=flag, persona_lines=never
        ) as rig:
            checks = {c.name: c for c in await RuntimeControl(rig.rt).doctor()}
            await ask(rig, flag, reboot)
    assert reboot.count == 0
    assert "does not allow automatic reboots" in capsys.readouterr().out
    assert checks["security updates"].status == "warn"
    assert "reboot by hand" in checks["security updates"].detail


async def test_a_daemon_that_does_not_answer_makes_it_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag, reboot = pending(tmp_path), Reboots()
    control = ControlSettings(socket_path=tmp_path / "control.sock", socket_group="")
    assert cmd_reboot_if_idle(control, timeout_s=5.0, flag=flag, reboot=reboot) == 0
    assert reboot.count == 0
    assert "reboot needed, waiting: huxleyd is not answering" in capsys.readouterr().out


async def test_the_persona_key_applies_on_reload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The admin sets [updates] reboot = "never" and runs `systemctl reload huxleyd`.
    flag, reboot = pending(tmp_path), Reboots()
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, reboot_flag=flag) as rig:
            persona = tmp_path / "personas" / "default.toml"
            persona.write_text(persona.read_text() + '\n[updates]\nreboot = "never"\n')
            await rig.rt.reload()
            await ask(rig, flag, reboot)
    assert reboot.count == 0
    assert "does not allow automatic reboots" in capsys.readouterr().out
