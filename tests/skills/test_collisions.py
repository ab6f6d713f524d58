"""Two distributions registering one skill name: never resolved silently.

Each case installs a real distribution (a ``.dist-info`` with entry points)
whose ``timers`` collides with our first-party one, and checks the whole
message: the persona file, both distributions, and how to choose.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxley_sdk.testing import make_test_context
from huxleyd.errors import ConfigError, SkillCollisionError
from huxleyd.skillhost.host import SkillHost
from huxleyd.skillhost.loading import installed_skills
from tests.fakes.wheels import write_check_config

THEIR_TIMERS = """
from huxley_sdk import ToolDefinition, ToolResult

SEEN = []

class TimersSkill:
    name = "timers"
    tools = [ToolDefinition(name="set_timer", description="Their timer.")]

    async def setup(self, ctx):
        SEEN.append(dict(ctx.config))

    async def handle(self, tool_name, args):
        return ToolResult(output='{"theirs": true}')
"""

OURS = "huxleyd (huxleyd.skills.timers:TimersSkill)"
THEIRS = "huxley-skill-timers (their_timers:TimersSkill)"


@pytest.fixture
def their_timers(tmp_path: Path) -> Iterator[Path]:
    from tests.fakes.distributions import installed_skill

    with installed_skill(
        tmp_path / "site", "huxley-skill-timers", "timers = their_timers:TimersSkill", THEIR_TIMERS
    ) as site:
        yield site


def load(persona: dict[str, dict[str, object]]) -> SkillHost:
    return SkillHost.load(list(persona), configs=persona, persona_file="personas/home.toml")


def test_both_registrations_are_seen(their_timers: Path) -> None:
    found = [s.distribution for s in installed_skills()["timers"]]
    assert found == ["huxley-skill-timers", "huxleyd"]


def test_no_choice_fails_naming_both_distributions_and_the_persona(their_timers: Path) -> None:
    with pytest.raises(SkillCollisionError) as info:
        load({"timers": {}})
    assert str(info.value) == (
        f"personas/home.toml: skill 'timers' is provided by 2 distributions: {THEIRS} and {OURS}; "
        'pick one in [skills.timers] with from = "huxley-skill-timers" or from = "huxleyd"'
    )


async def test_from_picks_their_distribution_and_is_not_part_of_the_config(
    their_timers: Path,
) -> None:
    host = load({"timers": {"from": "huxley-skill-timers", "sound": "bell"}})
    assert host.sources == {"timers": "huxley-skill-timers"}
    # both keep timer:<id> keys, in different shapes: theirs do not read ours
    assert host.storage_namespace("timers") == "timers@huxley-skill-timers"
    assert [t.name for t in host.tools] == ["set_timer"]
    await host.setup_all(
        lambda name, cfg: make_test_context(name=name, config=cfg),
        {"timers": {"from": "huxley-skill-timers", "sound": "bell"}},
    )
    assert sys.modules["their_timers"].SEEN == [{"sound": "bell"}]


def test_from_picks_ours(their_timers: Path) -> None:
    host = load({"timers": {"from": "huxleyd"}})
    assert host.sources == {"timers": "huxleyd"}
    assert host.storage_namespace("timers") == "timers"  # ours, where it always was
    assert "set_timer" in [t.name for t in host.tools]
    assert type(host.skills[0]).__module__ == "huxleyd.skills.timers"


def test_from_compares_names_as_pypi_does(their_timers: Path) -> None:
    host = load({"timers": {"from": "Huxley_Skill.Timers"}})
    assert host.sources == {"timers": "huxley-skill-timers"}


def test_from_naming_a_distribution_that_does_not_provide_it(their_timers: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load({"timers": {"from": "huxley-skill-timerz"}})
    assert str(info.value) == (
        "personas/home.toml: skills.timers.from: distribution 'huxley-skill-timerz' does not "
        f"provide skill 'timers' (provided by: {THEIRS} and {OURS})"
    )


def test_from_without_a_collision_must_still_match() -> None:
    with pytest.raises(ConfigError) as info:
        load({"radio": {"from": "huxley-skill-radio"}})
    assert str(info.value) == (
        "personas/home.toml: skills.radio.from: distribution 'huxley-skill-radio' does not "
        "provide skill 'radio' (provided by: huxleyd (huxleyd.skills.radio:RadioSkill))"
    )


def test_from_must_be_a_name(their_timers: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load({"timers": {"from": 3}})
    assert str(info.value) == (
        "personas/home.toml: skills.timers.from: expected a distribution name "
        "(e.g. 'huxley-skill-timers'), got 3"
    )


def test_a_collision_on_a_skill_the_persona_does_not_load_is_no_error(
    their_timers: Path,
) -> None:
    host = load({"system": {}})
    assert host.sources == {"system": "huxleyd"}


def _check_config(tmp_path: Path, site: Path, persona: str) -> subprocess.CompletedProcess[str]:
    config = write_check_config(tmp_path, persona)
    return subprocess.run(
        [sys.executable, "-m", "huxleyd", "--check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=120,
    )


def test_check_config_leaves_out_a_collision_and_passes_with_a_choice(
    their_timers: Path, tmp_path: Path
) -> None:
    failed = _check_config(tmp_path, their_timers, "[skills.timers]\n")
    persona = tmp_path / "personas" / "default.toml"
    # The start leaves the skill out and runs: the check says so, in the same words.
    assert failed.returncode == 0, failed.stderr
    assert ": runs degraded (" in failed.stdout
    assert (
        f"  left out: skill:timers: {persona}: skill 'timers' is provided by 2 distributions: "
        f'{THEIRS} and {OURS}; pick one in [skills.timers] with from = "huxley-skill-timers" '
        'or from = "huxleyd"; fix it, then restart'
    ) in failed.stdout.splitlines()
    chosen = _check_config(
        tmp_path, their_timers, '[skills.timers]\nfrom = "huxley-skill-timers"\n'
    )
    assert chosen.returncode == 0, chosen.stderr
    assert "timers" in chosen.stdout
