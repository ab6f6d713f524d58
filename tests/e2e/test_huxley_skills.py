"""End to end: Huxley's own published skills run here unchanged.

A persona of Huxley's ``reminders``, ``timers`` and ``audiobooks`` (the
wheels from PyPI, cached; ``timers`` and ``audiobooks`` collide with ours,
so the persona picks Huxley's with ``from``) passes ``huxleyd
--check-config``; the daemon starts with it; a scripted turn calls
``add_reminder``; its output reaches the model; the reminders skill's
``prompt_context`` (the time and time zone) is in the session
instructions; and two seconds later the reminder fires through
``ctx.inject_turn`` and is heard on the speaker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from tests.e2e.harness import Rig, tone_windows, until, write_config
from tests.fakes.wheels import cached_wheel, fetch_dists, wheels_on_path

PACKAGES = (
    "huxley-skill-reminders==0.1.0",
    "huxley-skill-timers==0.1.0",
    "huxley-skill-audiobooks==0.1.0",
    "python-dateutil==2.9.0.post0",
    "six==1.17.0",
)
SKILLS = ("reminders", "timers", "audiobooks")
SKILL_CONFIG = {
    "timers": 'from = "huxley-skill-timers"',
    "audiobooks": 'from = "huxley-skill-audiobooks"\nlibrary = "books"',
}
ANNOUNCE_HZ = 550.0
"""The pitch of "ding" in the simulator's tone speech (its default reply: "ding ding")."""


@pytest.fixture
def huxley_site(tmp_path: Path) -> Iterator[Path]:
    cache = fetch_dists(PACKAGES)
    wheels = [cached_wheel(cache, p) for p in PACKAGES]
    with wheels_on_path(tmp_path / "site", wheels) as site:
        yield site


def test_check_config_passes(huxley_site: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, skills=SKILLS, skill_config=SKILL_CONFIG)
    result = subprocess.run(
        [sys.executable, "-m", "huxleyd", "--check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(huxley_site)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert all(name in result.stdout for name in SKILLS), result.stdout


async def test_a_reminder_is_added_by_the_model_and_fires_aloud(
    huxley_site: Path, tmp_path: Path
) -> None:
    when = (datetime.now(UTC) + timedelta(seconds=3)).isoformat(timespec="seconds")
    add = ToolCallSpec(
        name="add_reminder", arguments={"message": "take the pills", "when_iso": when}
    )
    scenario = Scenario(
        default_reply="ding ding",  # what the simulator answers the inject with
        turns=(
            TurnSpec(
                responses=(
                    ResponseSpec(tool_calls=(add,)),
                    ResponseSpec(say="okay", tone_hz=330.0, duration_ms=300),
                )
            ),
        ),
    )
    async with Rig(tmp_path, scenario, skills=SKILLS, skill_config=SKILL_CONFIG) as rig:
        assert rig.rt.parts.host.sources == {
            "reminders": "huxley-skill-reminders",
            "timers": "huxley-skill-timers",
            "audiobooks": "huxley-skill-audiobooks",
        }
        assert rig.rt.parts.host.storage_namespace("reminders") == "reminders"  # no first-party one
        assert rig.rt.parts.host.storage_namespace("timers") == "timers@huxley-skill-timers"
        await until(lambda: _updates(rig), "the session is configured")
        instructions = _updates(rig)[0]["session"]["instructions"]
        assert instructions.startswith("Be brief.\n\n")
        assert "Europe/Madrid" in instructions  # the reminders skill's prompt_context

        coordinator = rig.rt.parts.coordinator
        coordinator.say("remind me to take the pills in a moment")
        await until(lambda: rig.sim.record.tool_outputs, "add_reminder answered the model")
        (output,) = rig.sim.record.tool_outputs.values()
        assert "error" not in json.loads(output), output
        await until(rig.idle, "the turn ends")

        mark = len(rig.speaker())
        await until(
            lambda: rig.announced("take the pills") > 0 or _fired(rig),
            "the reminder fires through inject_turn",
            timeout_s=30,
        )
        await until(
            lambda: len(tone_windows(rig.speaker()[mark:], ANNOUNCE_HZ)) >= 3,
            "the reminder is heard",
            timeout_s=30,
        )


def _updates(rig: Rig) -> list[dict[str, Any]]:
    return [e for e in rig.sim.raw if e.get("type") == "session.update"]


def _fired(rig: Rig) -> bool:
    """A response.create whose instructions carry the reminder's message."""
    return any(
        e.get("type") == "response.create" and "take the pills" in json.dumps(e.get("response", {}))
        for e in rig.sim.raw
    )
