"""The scenario suite against every provider kind, through the simulator.

The real daemon runs with ``[provider] kind = "openai" | "xai" | "gemini"``
and the simulator speaks that kind's dialect (every client message
validated there). Each case asserts what a person would notice, the same
for every kind, and the documented fallback where a capability is missing:
xAI and Gemini have no cancel and no truncate, so a barge-in is a local cut
(the speaker silent within a period all the same, nothing sent to cancel or
truncate, what was heard logged by the coordinator).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxleyd.logs import FIELDS_ATTR
from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from huxleyd.sim.server import SimDialect
from tests.e2e.harness import (
    RATE,
    Rig,
    first_nonsilent,
    level_dbfs,
    scenario_skill_installed,
    silent_run_samples,
    until,
)

KINDS: list[SimDialect] = ["openai", "xai", "gemini"]
PERIOD = RATE // 50
CUT_OR_TRUNCATE = {"response.cancel", "conversation.item.truncate"}

kinds = pytest.mark.parametrize("kind", KINDS)


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def turn(*responses: ResponseSpec) -> TurnSpec:
    return TurnSpec(hear="", responses=responses)


def call(name: str, **arguments: object) -> ToolCallSpec:
    return ToolCallSpec(name=name, arguments=dict(arguments))


def speech(ms: int = 800, hz: float = 440.0, **more: Any) -> ResponseSpec:
    return ResponseSpec(say="words", tone_hz=hz, duration_ms=ms, **more)


def answered_by_itself(rig: Rig) -> bool:
    """After the user's audio, the reply was asked for the provider's way."""
    types = rig.sent_types()
    if rig.kind == "gemini":  # the model answers an ended activity: no request at all
        return "realtimeInput.activityEnd" in types and "clientContent" not in types
    commit = types.index("input_audio_buffer.commit")
    return types[commit + 1] == "response.create"


def prompts(rig: Rig) -> list[str]:
    """Per-response prompts the daemon sent (instructions, or Gemini user text)."""
    out = []
    for raw in rig.sim.raw:
        if rig.kind == "gemini" and "clientContent" in raw:
            out += [p["text"] for t in raw["clientContent"]["turns"] for p in t["parts"]]
        elif raw.get("type") == "response.create":
            out.append((raw.get("response") or {}).get("instructions") or "")
    return out


@kinds
async def test_info_tool_turn(tmp_path: Path, kind: SimDialect) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(tool_calls=(call("get_current_time"),)), speech()),)
    )
    async with Rig(tmp_path, scenario, kind=kind) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "the narrated answer")
        await until(rig.idle, "idle")
        assert answered_by_itself(rig)
        [output] = rig.sim.record.tool_outputs.values()
        assert json.loads(output)["timezone"] == "Europe/Madrid"
        assert rig.sim.record.committed_ms[0] >= 500  # the user's 0.6 s reached it
        assert level_dbfs(rig.speaker()) > -40, "the answer reached the speaker"
        last = rig.rt.parts.coordinator.last_turn
        assert last is not None and last.tools == ["get_current_time"]
        assert last.outcome is not None and last.outcome.value == "answered"
        assert rig.sim.violations == [] and rig.sim.record.sim_errors == []


@kinds
async def test_play_sound_precedes_the_narration(tmp_path: Path, kind: SimDialect) -> None:
    scenario = Scenario(turns=(turn(ResponseSpec(tool_calls=(call("news"),)), speech(600)),))
    async with Rig(tmp_path, scenario, earcons=False, kind=kind) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "narration")
        await until(rig.idle, "idle")
        out = rig.speaker()
        start = first_nonsilent(out)
        assert start is not None
        chime = out[start : start + 2400]
        assert np.all(np.abs(chime - 16384) <= 2), "the chime plays first, unmixed"
        speech_start = first_nonsilent(out, start + 2400)
        assert speech_start is not None
        assert speech_start - (start + 2400) <= PERIOD, "speech follows within a period"


@kinds
async def test_set_volume_reaches_the_control_and_persists(
    tmp_path: Path, kind: SimDialect
) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(tool_calls=(call("set_volume", level=30),)), speech(300)),)
    )
    async with Rig(tmp_path, scenario, kind=kind) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "narration")
        assert await rig.rt.parts.volume.get_level() == 30
        db = rig.rt.parts.db  # the device's level is the daemon's, not the skill's
        assert await db.get_state("volume_level") == "30"
        assert await db.skill_storage("system").get_setting("volume_level") is None


@kinds
async def test_audio_stream_after_speech_then_completion_prompt(
    tmp_path: Path, kind: SimDialect
) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(tool_calls=(call("song"),)), speech(500), speech(300, 550.0)),)
    )
    async with Rig(tmp_path, scenario, earcons=False, kind=kind) as rig:
        await rig.say_into_mic()
        skill: Any = rig.skill("scenario")
        await until(lambda: "song:finally" in skill.events, "the song ran to its end")
        assert skill.events == ["song:start", "song:end", "song:finally"]
        await until(lambda: rig.sim.record.responses_done >= 3, "completion prompt answered")
        assert prompts(rig)[-1].endswith("Say the song ended.")
        out = rig.speaker()
        speech_start = first_nonsilent(out)
        assert speech_start is not None
        song = np.flatnonzero(np.abs(np.abs(out) - 16384) <= 1)
        assert len(song) > RATE // 2
        assert song[0] > speech_start + int(0.4 * RATE), "the song starts after the speech"
        assert rig.sim.violations == []


async def test_barge_in_flushes_a_reply_that_arrived_in_one_burst(tmp_path: Path) -> None:
    # A fast link delivers seconds of speech ahead of the speaker: they wait in
    # the speech ring. Barge-in must drop them (the speaker flush), not only
    # stop asking for more: the simulator here sends the reply's audio at once.
    scenario = Scenario(turns=(turn(speech(6000, 330.0)), turn(speech(300, 550.0))))
    async with Rig(tmp_path, scenario, earcons=False, sim_speed=math.inf) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 1, "the whole reply was sent")
        await until(lambda: first_nonsilent(rig.speaker()) is not None, "the reply starts")
        reply_start = first_nonsilent(rig.speaker())
        assert reply_start is not None
        await until(lambda: rig.speaker().shape[0] - reply_start > RATE // 2, "0.5 s in")
        queued = rig.rt.parts.engine.source("speech")
        assert queued.queued_ms() > 3000, "seconds of the reply wait unheard"
        button = rig.rt.parts.button
        pressed_at = rig.speaker().shape[0]
        button.press()
        await until(lambda: rig.speaker().shape[0] > pressed_at + RATE, "a second more")
        out = rig.speaker()
        assert np.max(np.abs(out[pressed_at + 2 * PERIOD :])) < 50, "silent within a period"
        assert queued.queued_ms() == 0
        button.release()


@kinds
async def test_barge_in_silences_within_a_period_with_each_kinds_fallback(
    tmp_path: Path, kind: SimDialect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="huxleyd.turns")
    scenario = Scenario(turns=(turn(speech(6000, 330.0)), turn(speech(300, 550.0))))
    async with Rig(tmp_path, scenario, earcons=False, kind=kind) as rig:
        await rig.say_into_mic()
        await until(lambda: first_nonsilent(rig.speaker()) is not None, "the reply starts")
        reply_start = first_nonsilent(rig.speaker())
        assert reply_start is not None
        await until(lambda: rig.speaker().shape[0] - reply_start > int(1.5 * RATE), "1.5 s in")
        button = rig.rt.parts.button
        pressed_at = rig.speaker().shape[0]
        button.press()
        await until(lambda: rig.speaker().shape[0] > pressed_at + RATE // 2, "half a second more")
        out = rig.speaker()
        assert np.max(np.abs(out[pressed_at + 2 * PERIOD :])) < 50, "silent within a period"
        span = out[reply_start : pressed_at + 2 * PERIOD]
        span = span[: int(np.flatnonzero(np.abs(span) > 200)[-1]) + 1]
        heard_ms = (len(span) - silent_run_samples(span)) * 1000 / RATE
        [barge_in] = [r for r in caplog.records if r.getMessage().startswith("barge_in")]
        logged_ms = getattr(barge_in, FIELDS_ATTR)["heard_ms"]
        assert abs(logged_ms - heard_ms) <= 25, "the coordinator's own record of what was heard"
        types = set(rig.sent_types())
        if rig.rt.parts.connection.capabilities.truncate:
            await until(lambda: len(rig.sim.truncations) == 1, "truncate received")
            assert abs(rig.sim.truncations[0].audio_end_ms - heard_ms) <= 25
            assert CUT_OR_TRUNCATE.issubset(rig.sent_types())
        else:  # the documented fallback: a local cut, nothing sent to cancel or truncate
            assert not (CUT_OR_TRUNCATE & types)
            assert rig.sim.truncations == []
            protocol: Any = rig.rt.parts.connection.core  # type: ignore[attr-defined]
            assert protocol.dropped_audio_chunks > 0, "the cut reply's late audio was dropped"
        button.release()
        await until(lambda: rig.sim.record.responses_done >= 2, "the next turn is answered")
        await until(rig.idle, "idle")
        last = rig.rt.parts.coordinator.last_turn
        assert last is not None and last.outcome is not None and last.outcome.value == "answered"
        assert rig.sim.record.errors_sent == []  # xAI: the next create waited for the old reply
        assert rig.sim.violations == []


@kinds
async def test_failing_hanging_and_invalid_tools_answer_and_the_session_goes_on(
    tmp_path: Path, kind: SimDialect
) -> None:
    scenario = Scenario(
        turns=(
            turn(
                ResponseSpec(
                    tool_calls=(call("explode"), call("set_volume", level=400), call("hang"))
                ),
                speech(300),
            ),
            turn(speech(300)),
        )
    )
    async with Rig(tmp_path, scenario, kind=kind) as rig:
        rig.rt.parts.host.tool_timeout_s = 0.3
        await rig.say_into_mic()
        await until(lambda: len(rig.sim.record.tool_outputs) == 3, "three outputs")
        outputs = [json.loads(o) for o in rig.sim.record.tool_outputs.values()]
        assert sorted(o["error"] for o in outputs) == [
            "invalid_arguments",
            "timeout",
            "tool_failed",
        ]
        await until(lambda: rig.sim.record.responses_done >= 2, "narration")
        await until(rig.idle, "idle")
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 3, "the next turn works")
        assert rig.sim.violations == []


@kinds
async def test_dropped_connection_reconnects_and_the_next_turn_works(
    tmp_path: Path, kind: SimDialect
) -> None:
    scenario = Scenario(
        turns=(
            turn(ResponseSpec(say="cut", tone_hz=440.0, duration_ms=3000, drop_after_deltas=5)),
            turn(speech(300)),
        )
    )
    async with Rig(tmp_path, scenario, kind=kind) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.connection_count >= 2, "reconnected")
        await until(lambda: rig.rt.connection_state == "connected", "connected again")
        await until(rig.idle, "idle")
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 1, "answered after the reconnect")
        assert rig.sim.violations == []


@kinds
async def test_text_turn_from_say(tmp_path: Path, kind: SimDialect) -> None:
    async with Rig(tmp_path, Scenario(turns=(turn(speech(300)),)), kind=kind) as rig:
        coordinator = rig.rt.parts.coordinator
        coordinator.say("what time is it")
        await until(lambda: rig.sim.record.responses_done >= 1, "answered")
        assert rig.sim.record.user_texts == ["what time is it"]


async def test_gemini_go_away_resumes_and_the_conversation_goes_on(tmp_path: Path) -> None:
    scenario = Scenario(turns=(turn(speech(300, go_away_s=60.0)), turn(speech(300))))
    async with Rig(tmp_path, scenario, kind="gemini") as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.connection_count >= 2, "reconnected after goAway")
        await until(lambda: rig.rt.connection_state == "connected", "connected again")
        gemini = rig.sim.record.gemini
        # "connected" is reported when the socket opens; the resuming setup
        # may still be on its way to the sim.
        await until(lambda: len(gemini.resumed_handles) == 1, "resumed with the handle")
        assert gemini.go_away_expired == 0
        await until(rig.idle, "idle")
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "the next turn is answered")
        [conversation] = gemini.history.values()
        assert conversation == ["user:audio", "model:speech"] * 2
        assert rig.sent_types().count("setup") == 2 and gemini.history_replays == 0
        assert rig.sim.violations == []
