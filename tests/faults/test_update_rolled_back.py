"""A release ``huxleyctl update`` rolled back, as the previous release's daemon
reports it once it runs again (huxleyd/update/ writes the record before it
restarts it): ``status`` and ``doctor`` list it among the degraded parts, the
journal says it, and the first press of that boot plays the "something is
wrong" cue; after a later reboot it is still listed, but not cued again."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.sim.scenario import Scenario
from huxleyd.update import boot_id
from tests.e2e.harness import Rig, scenario_skill_installed

SKILLS = ("system", "scenario")


def rolled_back(tmp: Path, boot: str) -> Path:
    state = tmp / "update-state.json"
    record = {
        "version": "0.1.2",
        "to": "0.1.1",
        "at": "2026-12-03T05:00:00Z",
        "reason": "systemd restarted it 1 time (exit-code) 44 s after READY",
        "boot_id": boot,
    }
    state.write_text(json.dumps({"rolled_back": record, "refused": ["0.1.2"]}))
    return state


async def test_the_rollback_is_in_status_and_cued_at_the_next_press(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    state = rolled_back(tmp_path, boot_id())
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, update_state=state) as rig:
            report = await RuntimeControl(rig.rt).status()
            (line,) = [p for p in report.problems if p.startswith("update:")]
            assert "update to 0.1.2 rolled back" in line and "44 s after READY" in line
            assert "0.1.1 runs" in line and str(state) in line
            unheard = rig.rt.degraded.take_unheard()
            assert [p.part for p in unheard] == ["update"]
            assert "went back to the previous one" in unheard[0].spoken()
    assert "part_degraded" in caplog.text


async def test_after_a_later_reboot_it_is_listed_but_not_cued(tmp_path: Path) -> None:
    state = rolled_back(tmp_path, "another-boot")
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS, update_state=state) as rig:
            report = await RuntimeControl(rig.rt).status()
            assert any(p.startswith("update:") for p in report.problems)
            assert rig.rt.degraded.take_unheard() == []


async def test_status_names_the_version_and_release(tmp_path: Path) -> None:
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=()), skills=SKILLS) as rig:
            report = await RuntimeControl(rig.rt).status()
    assert report.version == "0.1.0"
    assert report.release == ""  # this checkout's venv is not a release
    assert not any(p.startswith("update:") for p in report.problems)
