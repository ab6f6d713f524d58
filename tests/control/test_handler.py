"""The reports round-trip through their wire form, and bad shapes are named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from huxleyd.control.errors import ControlProtocolError
from huxleyd.control.handler import (
    DBFS_FLOOR,
    DoctorCheck,
    LevelsSample,
    SkillInfo,
    StatusReport,
    XrunCounts,
)

REPORT = StatusReport(
    state="speaking",
    provider_state="connected",
    media=None,
    volume=40,
    uptime_s=12.25,
    xruns=XrunCounts(
        underruns=6,
        overruns=2,
        late_periods=3,
        dropped_mic_frames=4,
        card_underruns=3,
        speaker_dropouts=2,
        source_gaps=1,
        silences={"card_xruns": 3, "late_source": 1, "late_source_ms": 42.5},
    ),
    last_turn_timings_ms={"press_to_first_frame": 12.0},
    last_turn_id="t-9",
    persona="abuela",
    provider_kind="openai",
    is_simulator=False,
)


def wire(d: dict[str, Any]) -> dict[str, Any]:
    """Through JSON and back, as the socket does."""
    out: dict[str, Any] = json.loads(json.dumps(d, allow_nan=False))
    return out


def test_status_round_trips() -> None:
    assert StatusReport.from_dict(wire(REPORT.to_dict())) == REPORT


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"volume": "loud"}, "status: 'volume' has the wrong type"),
        ({"volume": True}, "status: 'volume' has the wrong type"),
        ({"is_simulator": 1}, "status: 'is_simulator' has the wrong type"),
        ({"uptime_s": None}, "status: 'uptime_s' expected a number"),
        ({"media": 3}, "status: 'media' has the wrong type"),
        ({"xruns": {"underruns": 1}}, "status xruns: missing 'overruns'"),
        ({"last_turn_timings_ms": {"x": "fast"}}, "'x' expected a number"),
    ],
)
def test_status_from_dict_names_the_bad_field(change: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ControlProtocolError) as caught:
        StatusReport.from_dict({**REPORT.to_dict(), **change})
    assert fragment in str(caught.value)


def test_an_older_daemons_underruns_come_without_their_parts() -> None:
    """A daemon from before the breakdown sends only the total: the parts read 0,
    none invented; a part of the wrong type is still refused by name."""
    d = REPORT.to_dict()
    for key in ("card_underruns", "speaker_dropouts", "source_gaps"):
        del d["xruns"][key]
    older = StatusReport.from_dict(wire(d)).xruns
    assert (older.underruns, older.card_underruns, older.source_gaps) == (6, 0, 0)
    d["xruns"]["source_gaps"] = "2"
    with pytest.raises(ControlProtocolError, match="'source_gaps' has the wrong type"):
        StatusReport.from_dict(d)


def test_status_missing_field() -> None:
    d = REPORT.to_dict()
    del d["persona"]
    with pytest.raises(ControlProtocolError, match="status: missing 'persona'"):
        StatusReport.from_dict(d)


def test_levels_are_clamped_to_json_safe_values() -> None:
    assert LevelsSample(float("-inf"), float("nan")).to_dict() == {
        "mic_dbfs": DBFS_FLOOR,
        "output_dbfs": DBFS_FLOOR,
        "silences": 0,
    }
    assert LevelsSample(3.0, -500.0, 1).to_dict() == {
        "mic_dbfs": 0.0,
        "output_dbfs": DBFS_FLOOR,
        "silences": 1,
    }
    assert LevelsSample.from_dict(wire(LevelsSample(-6.5, -1.0, 3).to_dict())) == LevelsSample(
        -6.5, -1.0, 3
    )
    # an older daemon sends no count: none is claimed
    assert LevelsSample.from_dict({"mic_dbfs": -6.5, "output_dbfs": -1.0}).silences == 0


def test_skill_and_doctor_round_trip() -> None:
    skill = SkillInfo("timers", ("set_timer", "cancel_timer"), "huxley-skill-timers", "0.2.0")
    assert SkillInfo.from_dict(wire(skill.to_dict())) == skill
    failed = SkillInfo("news", (), "huxley-skill-news", "0.1.0", state="failed", reason="no key")
    assert SkillInfo.from_dict(wire(failed.to_dict())) == failed
    # An older daemon sends name and tools only: nothing is made up for it.
    assert SkillInfo.from_dict({"name": "x", "tools": []}) == SkillInfo("x")
    with pytest.raises(ControlProtocolError, match="'state' expected one of"):
        SkillInfo.from_dict({"name": "x", "tools": [], "state": "sleepy"})
    check = DoctorCheck("gpio", False, "GPIO17 busy", "stop the other process")
    assert DoctorCheck.from_dict(wire(check.to_dict())) == check
    with pytest.raises(ControlProtocolError, match="'tools' expected strings"):
        SkillInfo.from_dict({"name": "x", "tools": [1]})
    with pytest.raises(ControlProtocolError, match="doctor check: 'ok' has the wrong type"):
        DoctorCheck.from_dict({"name": "x", "ok": "yes", "detail": "", "fix": ""})
