"""The no-RTC test's VM script (image/nortc-test/alarms.py), checked without a
VM: what it seeds is what the timers skill stores (read back through the
daemon's own database and Alarm parser), and its judge fails an alarm
announced early, late, twice or not at all. `make image-test-nortc` boots it."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from huxleyd.skills.timers import KEY_PREFIX, Alarm, Kind
from huxleyd.storage.db import Database

REPO = Path(__file__).resolve().parents[2]


def alarms_script() -> ModuleType:
    """image/nortc-test/alarms.py, imported from its path (it is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "nortc_alarms", REPO / "image/nortc-test/alarms.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[list[Alarm], dict[str, Any]]:
    db_path = tmp_path / "default.db"
    Database.open_sync(db_path).close_sync()
    alarms_script().seed(str(db_path), 1000.0)
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)

    async def read() -> list[tuple[str, str]]:
        db = await Database.open(db_path)
        try:
            return await db.skill_storage("timers").list_settings(KEY_PREFIX)
        finally:
            await db.close()

    return [Alarm.from_json(value) for _, value in asyncio.run(read())], plan


def test_the_seed_is_what_the_timers_skill_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alarms, plan = seeded(tmp_path, capsys)
    assert {a.id for a in alarms} == set(plan)
    timers = [a for a in alarms if a.kind is Kind.TIMER]
    assert len(timers) == 1 and timers[0].boot_id and timers[0].due_steady_s is not None
    assert sum(a.kind is Kind.REMINDER for a in alarms) == 2
    # One overdue before the step, the others after it and a minute apart.
    dues = sorted(a.due_ts for a in alarms)
    assert dues[1] - dues[0] > 60 and dues[2] - dues[1] >= 60


def entry(event: str, key_or_id: str, at_s: float) -> dict[str, str]:
    field = "HUXLEY_KEY" if event == "inject_queued" else "HUXLEY_ID"
    return {field: key_or_id, "__REALTIME_TIMESTAMP": str(int(at_s * 1e6))}


@pytest.mark.parametrize(
    ("offset_s", "repeat", "fails"),
    [(0.5, False, 0), (-5.0, False, 1), (30.0, False, 1), (0.5, True, 2)],
    ids=["on time", "early", "late", "twice"],
)
def test_the_judge_sees_early_late_and_twice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, offset_s: float, repeat: bool, fails: int
) -> None:
    script = alarms_script()
    step, plan = (
        1000.0,
        {"aa": {"kind": "reminder", "due_ts": 900.0}, "bb": {"kind": "timer", "due_ts": 1200.0}},
    )
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    queued = [
        entry("inject_queued", "timer:aa", step + 0.5),
        entry("inject_queued", "timer:bb", 1200 + offset_s),
    ]
    fired = [entry("timer_fired", "aa", step + 9), entry("timer_fired", "bb", 1209 + offset_s)]
    if repeat:
        queued.append(entry("inject_queued", "timer:bb", 1300.0))
    monkeypatch.setattr(
        script, "journal", lambda event: queued if event == "inject_queued" else fired
    )
    assert script.check(str(tmp_path / "plan.json"), step, 10.0) == fails
