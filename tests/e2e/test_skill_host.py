"""End to end: Huxley's own published skills run in the skill host process.

Huxley's ``timers`` and ``audiobooks`` wheels (from PyPI, cached) are
installed into a real skills environment beside our SDK, never on the
daemon's path. The daemon finds them there (``from`` picks them over our
first-party skills of the same names), runs each in a host process of its
own, as the skill user when root; a scripted turn calls ``set_timer``
(whose output reaches the model), the timer fires through
``ctx.inject_turn`` across the link and is heard; a second turn calls
``play_audiobook``, whose AudioStream (ffmpeg, in the host) is streamed
over the link into the media ring and heard on the speaker, at its pitch.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from huxleyd.skillhost.remote import DATA_VARIABLE, RemoteSkill
from huxleyd.skillhost.skillenv import ENV_VARIABLE, SkillsEnv
from tests.e2e.harness import Rig, tone_windows, until
from tests.fakes.wheels import cached_wheel, fetch_dists, write_check_config
from tests.skillhost.envs import ensure_skill_user, probe_wheel, skills_env_with

PACKAGES = (
    "huxley-skill-timers==0.1.0",
    "huxley-skill-audiobooks==0.1.0",
)
SKILLS = ("system", "timers", "audiobooks")
ANNOUNCE_HZ = 550.0
"""The pitch of "ding" in the simulator's tone speech (its default reply: "ding ding")."""
BOOK_HZ = 700.0


@pytest.fixture(scope="module")
def huxley_env() -> SkillsEnv:
    ensure_skill_user()
    cache = fetch_dists(PACKAGES)
    return skills_env_with([cached_wheel(cache, p) for p in PACKAGES])


@pytest.fixture
def library() -> Iterator[Path]:
    """A folder the skill user can read, holding one FLAC book: a 700 Hz tone."""
    folder = Path(tempfile.mkdtemp(prefix="huxleyd-library-"))
    folder.chmod(0o755)
    samples = [int(8000 * math.sin(2 * math.pi * BOOK_HZ * i / 24000)) for i in range(24000 * 4)]
    raw = folder / "tone.raw"
    raw.write_bytes(struct.pack(f"<{len(samples)}h", *samples))
    command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "s16le", "-ar", "24000"]
    subprocess.run([*command, "-ac", "1", "-i", str(raw), str(folder / "tone.flac")], check=True)
    raw.unlink()
    (folder / "tone.flac").chmod(0o644)
    yield folder
    shutil.rmtree(folder)


async def test_a_timer_and_a_book_of_huxleys_packages_through_the_host(
    huxley_env: SkillsEnv, library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VARIABLE, str(huxley_env.root))
    monkeypatch.setenv(DATA_VARIABLE, str(library / "skills-data"))
    timer = ToolCallSpec(name="set_timer", arguments={"seconds": 1, "message": "the tea is ready"})
    book = ToolCallSpec(name="play_audiobook", arguments={"book_id": "tone.flac"})
    scenario = Scenario(
        default_reply="ding ding",  # what the simulator answers the timer's inject with
        turns=(
            TurnSpec(responses=(ResponseSpec(tool_calls=(timer,)), ResponseSpec(say="okay"))),
            TurnSpec(responses=(ResponseSpec(tool_calls=(book,)), ResponseSpec(say="here"))),
        ),
    )
    config = {
        "timers": 'from = "huxley-skill-timers"',
        "audiobooks": f'from = "huxley-skill-audiobooks"\nlibrary = "{library}"',
    }
    async with Rig(tmp_path, scenario, skills=SKILLS, skill_config=config) as rig:
        host = rig.rt.parts.host
        assert not host.failed, host.failed
        remote = {s.name: s for s in host.skills if isinstance(s, RemoteSkill)}
        assert sorted(remote) == ["audiobooks", "timers"]
        assert all(s.pid not in (None, os.getpid()) for s in remote.values())
        assert "huxley_skill_timers" not in sys.modules  # never imported by the daemon

        coordinator = rig.rt.parts.coordinator
        coordinator.say("set a timer for a second")
        await until(lambda: rig.sim.record.tool_outputs, "set_timer answered the model")
        (output,) = rig.sim.record.tool_outputs.values()
        assert "error" not in json.loads(output), output
        await until(rig.idle, "the turn ends")
        mark = len(rig.speaker())
        await until(
            lambda: rig.announced("the tea is ready") > 0 or _fired(rig, "the tea is ready"),
            "the timer fires through inject_turn, across the link",
            timeout_s=30,
        )
        await until(
            lambda: len(tone_windows(rig.speaker()[mark:], ANNOUNCE_HZ)) >= 3,
            "the timer is heard",
            timeout_s=30,
        )
        await until(rig.idle, "the announcement ends", timeout_s=30)

        mark = len(rig.speaker())
        coordinator.say("play the tone book")
        await until(
            lambda: len(tone_windows(rig.speaker()[mark:], BOOK_HZ)) >= 100,
            "2 s of the book (more than the link's window of 8 chunks) on the speaker",
            timeout_s=30,
        )
        assert rig.media_playing()
        await asyncio.sleep(0)


def _fired(rig: Rig, text: str) -> bool:
    return any(
        e.get("type") == "response.create" and text in json.dumps(e.get("response", {}))
        for e in rig.sim.raw
    )


# ---------------------------------------------------------------- supervision, degrade


@pytest.fixture(scope="module")
def probe_skills_env() -> SkillsEnv:
    ensure_skill_user()
    with tempfile.TemporaryDirectory() as tmp:
        return skills_env_with([probe_wheel(Path(tmp))])


def _session_tools(rig: Rig) -> list[str]:
    updates = [e for e in rig.sim.raw if e.get("type") == "session.update"]
    return [t["name"] for t in updates[-1]["session"].get("tools", [])] if updates else []


async def test_a_crashed_host_is_left_out_said_and_restarted(
    probe_skills_env: SkillsEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VARIABLE, str(probe_skills_env.root))
    monkeypatch.setenv(DATA_VARIABLE, str(tmp_path / "skills-data"))
    crash = ToolCallSpec(name="crash", arguments={})
    scenario = Scenario(turns=(TurnSpec(responses=(ResponseSpec(tool_calls=(crash,)),)),))
    async with Rig(
        tmp_path, scenario, skills=("system", "probe"), skill_retry_delays_s=(1.0,)
    ) as rig:
        host = rig.rt.parts.host
        (probe,) = [s for s in host.skills if isinstance(s, RemoteSkill)]
        first = probe.pid
        await until(lambda: "echo" in _session_tools(rig), "the probe's tools are offered")
        rig.rt.parts.coordinator.say("crash")
        await until(lambda: rig.sim.record.tool_outputs, "the crashed call is answered")
        (output,) = rig.sim.record.tool_outputs.values()
        assert json.loads(output)["error"] == "tool_failed"
        await until(lambda: "probe" in host.failed, "the probe is left out")
        said = " ".join(rig.rt.degraded.lines())
        assert "skill:probe" in said and "exited (status 3)" in said, said
        await until(lambda: "echo" not in _session_tools(rig), "its tools are withdrawn")
        assert _session_tools(rig), "the system skill's tools are still offered"
        await until(lambda: "probe" not in host.failed, "the probe is set up again", 30)
        assert probe.pid not in (None, first)
        assert "skill:probe" not in " ".join(rig.rt.degraded.lines())
        await until(lambda: "echo" in _session_tools(rig), "its tools are offered again")


async def test_a_broken_skills_environment_leaves_third_party_skills_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken-env"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").write_text("#!/bin/sh\necho 'no python here' >&2\nexit 1\n")
    (broken / "bin" / "python").chmod(0o755)
    (broken / "bin").chmod(0o755)
    broken.chmod(0o755)
    monkeypatch.setenv(ENV_VARIABLE, str(broken))
    ensure_skill_user()
    async with Rig(tmp_path, Scenario(turns=()), skills=("system", "probe")) as rig:
        host = rig.rt.parts.host
        assert [s.name for s in host.skills] == ["system"]
        reason = host.failed["probe"]
        assert "third-party skills are left out" in reason, reason
        assert "interpreter failed to list skills" in reason, reason
        assert "skill:probe" in " ".join(rig.rt.degraded.lines())


def test_check_config_checks_a_third_party_table_before_it_runs(
    probe_skills_env: SkillsEnv, tmp_path: Path
) -> None:
    """The probe's schema (additionalProperties false) is read by its host: a wrong
    key is what the start would leave out, and ``--check-config`` says so in the
    same words, naming the file and the key; a right table runs."""
    env = {**os.environ, ENV_VARIABLE: str(probe_skills_env.root)}
    command = [sys.executable, "-m", "huxleyd", "--check-config", "--config"]
    (tmp_path / "wrong").mkdir()
    (tmp_path / "right").mkdir()
    wrong = write_check_config(tmp_path / "wrong", '[skills.probe]\ncolour = "red"\n')
    result = subprocess.run(
        [*command, str(wrong)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert ": runs degraded (" in result.stdout, result.stdout
    assert "  left out: skill:probe: " in result.stdout, result.stdout
    assert "skills.probe.colour" in result.stdout, result.stdout
    assert "expected one of: greeting" in result.stdout, result.stdout
    right = write_check_config(tmp_path / "right", '[skills.probe]\ngreeting = "hi"\n')
    result = subprocess.run(
        [*command, str(right)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
