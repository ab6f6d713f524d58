"""End to end: mock button → WAV mic → coordinator → simulator → WAV speaker.

Each test asserts on what a person would notice (the speaker output, the
volume) and on what the provider received (every client event validated by
the simulator against the official ``openai`` types).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from tests.e2e.harness import (
    RATE,
    Rig,
    first_nonsilent,
    level_dbfs,
    scenario_skill_installed,
    silent_run_samples,
    until,
)

PERIOD = RATE // 50  # 20 ms


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def turn(*responses: ResponseSpec, hear: str = "") -> TurnSpec:
    return TurnSpec(hear=hear, responses=responses)


def call(name: str, **arguments: object) -> ToolCallSpec:
    return ToolCallSpec(name=name, arguments=dict(arguments))


def speech(ms: int = 800, hz: float = 440.0) -> ResponseSpec:
    return ResponseSpec(say="words", tone_hz=hz, duration_ms=ms)


def idle(rig: Rig) -> bool:
    coordinator = rig.rt.coordinator
    return coordinator is not None and coordinator.state.value == "idle"


async def test_info_tool_turn(tmp_path: Path) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(tool_calls=(call("get_current_time"),)), speech()),)
    )
    async with Rig(tmp_path, scenario) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "the narrated answer")
        await until(lambda: idle(rig), "idle")
        types = rig.sent_types()
        assert types[0] == "session.update"
        assert "input_audio_buffer.commit" in types
        commit = types.index("input_audio_buffer.commit")
        assert types[commit + 1] == "response.create"
        outputs = rig.sim.record.tool_outputs
        assert len(outputs) == 1
        assert json.loads(next(iter(outputs.values())))["timezone"] == "Europe/Madrid"
        assert rig.sim.violations == []
        assert len(rig.sim.record.committed_audio[0]) >= RATE  # ≥ 0.5 s of the user reached it
        out = rig.speaker()
        assert level_dbfs(out) > -40, "the answer reached the speaker"
        last = rig.rt.coordinator.last_turn  # type: ignore[union-attr]
        assert last is not None and last.tools == ["get_current_time"] and last.outcome is not None


async def test_play_sound_precedes_the_narration(tmp_path: Path) -> None:
    scenario = Scenario(turns=(turn(ResponseSpec(tool_calls=(call("news"),)), speech(600, 440.0)),))
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "narration")
        await until(lambda: idle(rig), "idle")
        out = rig.speaker()
        start = first_nonsilent(out)
        assert start is not None
        chime = out[start : start + 2400]
        # the chime is a constant +0.5 level: the first sound out is exactly it
        assert np.all(np.abs(chime - 16384) <= 2), "the chime plays first, unmixed"
        after = out[start + 2400 : start + 2400 + 2 * PERIOD]
        speech_start = first_nonsilent(out, start + 2400)
        assert speech_start is not None
        # nothing but the chime before the speech: no gap longer than a period
        assert speech_start - (start + 2400) <= PERIOD, (speech_start, start, len(after))


async def test_set_volume_reaches_the_control_and_persists(tmp_path: Path) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(tool_calls=(call("set_volume", level=30),)), speech(300)),)
    )
    async with Rig(tmp_path, scenario) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 2, "narration")
        assert await rig.rt.volume.get_level() == 30
        db = rig.rt.db
        assert db is not None
        assert await db.skill_storage("system").get_setting("volume_level") == "30"


async def test_audio_stream_after_speech_then_completion_prompt(tmp_path: Path) -> None:
    scenario = Scenario(
        turns=(
            turn(ResponseSpec(tool_calls=(call("song"),)), speech(500, 660.0), speech(300, 550.0)),
        )
    )
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        await rig.say_into_mic()
        assert rig.rt.host is not None
        skill: Any = rig.rt.host.skills[1]
        await until(lambda: "song:finally" in skill.events, "the song ran to its end", timeout_s=20)
        assert skill.events == ["song:start", "song:end", "song:finally"]
        await until(lambda: rig.sim.record.responses_done >= 3, "completion prompt answered")
        creates = [e for e in rig.sim.received if e.type == "response.create"]
        assert creates[-1].response.instructions.endswith("Say the song ended.")
        out = rig.speaker()
        speech_start = first_nonsilent(out)
        assert speech_start is not None
        # the song's constant ±0.5 samples appear only after the speech ended
        song = np.flatnonzero(np.abs(np.abs(out) - 16384) <= 1)
        assert len(song) > RATE // 2
        assert song[0] > speech_start + int(0.4 * RATE)


async def test_barge_in_cuts_within_a_period_and_truncates_at_what_was_heard(
    tmp_path: Path,
) -> None:
    scenario = Scenario(turns=(turn(speech(6000, 330.0)), turn(speech(300, 550.0))))
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        await rig.say_into_mic()
        await until(lambda: first_nonsilent(rig.speaker()) is not None, "the reply starts")
        reply_start = first_nonsilent(rig.speaker())
        assert reply_start is not None
        await until(
            lambda: rig.speaker().shape[0] - reply_start > int(1.5 * RATE), "1.5 s into the reply"
        )
        button = rig.rt.button
        assert button is not None
        pressed_at = rig.speaker().shape[0]
        button.press()
        await until(lambda: len(rig.sim.truncations) == 1, "truncate received")
        await until(lambda: rig.speaker().shape[0] > pressed_at + RATE // 2, "half a second more")
        out = rig.speaker()
        tail = out[pressed_at + 2 * PERIOD :]
        assert np.max(np.abs(tail)) < 50, "silent within one period (plus the ramp) of the press"
        span = out[reply_start : pressed_at + 2 * PERIOD]
        span = span[: int(np.flatnonzero(np.abs(span) > 200)[-1]) + 1]
        # Samples of the item really played: the span minus gaps where the
        # speech ring ran dry (runs of digital silence), which the playout
        # clock rightly does not count as heard audio.
        heard_samples = len(span) - silent_run_samples(span)
        truncate = rig.sim.truncations[0]
        assert abs(truncate.audio_end_ms - heard_samples * 1000 / RATE) <= 20 + 5
        types = rig.sent_types()
        assert types.index("response.cancel") < types.index("conversation.item.truncate")
        assert rig.rt.coordinator.dropped_late_chunks >= 0  # type: ignore[union-attr]
        button.release()
        await until(lambda: rig.sim.record.responses_done >= 2, "the next turn is answered")
        assert rig.sim.violations == []


async def test_failing_hanging_and_invalid_tools_answer_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    scenario = Scenario(
        turns=(
            turn(
                ResponseSpec(
                    tool_calls=(
                        call("explode"),
                        ToolCallSpec(name="set_volume", arguments={"level": 400}),
                        call("hang"),
                    )
                ),
                speech(300),
            ),
            turn(speech(300)),
        )
    )
    async with Rig(tmp_path, scenario) as rig:
        rig.rt.host.tool_timeout_s = 0.3  # type: ignore[union-attr]
        await rig.say_into_mic()
        await until(lambda: len(rig.sim.record.tool_outputs) == 3, "three outputs")
        outputs = [json.loads(o) for o in rig.sim.record.tool_outputs.values()]
        assert sorted(o["error"] for o in outputs) == [
            "invalid_arguments",
            "timeout",
            "tool_failed",
        ]
        await until(lambda: rig.sim.record.responses_done >= 2, "narration")
        await until(lambda: idle(rig), "idle")
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 3, "the next turn works")
        assert rig.sim.violations == []


async def test_dropped_connection_reconnects_and_the_next_turn_works(tmp_path: Path) -> None:
    scenario = Scenario(
        turns=(
            turn(ResponseSpec(say="cut", tone_hz=440.0, duration_ms=3000, drop_after_deltas=5)),
            turn(speech(300)),
        )
    )
    async with Rig(tmp_path, scenario) as rig:
        await rig.say_into_mic()
        await until(lambda: rig.sim.connection_count >= 2, "reconnected", timeout_s=20)
        await until(lambda: rig.rt.connection_state == "connected", "connected again")
        await until(lambda: idle(rig), "idle")
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 1, "answered after the reconnect")
        assert rig.sim.violations == []


async def test_text_turn_from_say(tmp_path: Path) -> None:
    scenario = Scenario(turns=(turn(speech(300)),))
    async with Rig(tmp_path, scenario) as rig:
        coordinator = rig.rt.coordinator
        assert coordinator is not None
        coordinator.say("what time is it")
        await until(lambda: rig.sim.record.responses_done >= 1, "answered")
        assert rig.sim.record.user_texts == ["what time is it"]


async def test_the_led_follows_the_turn_on_the_mock_pin(tmp_path: Path) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(delay_ms=400, say="x", tone_hz=440.0, duration_ms=800)),)
    )
    async with Rig(tmp_path, scenario) as rig:
        leds = rig.rt.leds
        assert leds is not None
        seen: list[str] = []
        original = leds.set_state

        def record(state: Any) -> None:
            if not seen or seen[-1] != state.value:
                seen.append(state.value)
            original(state)

        leds.set_state = record  # type: ignore[method-assign]
        led_pin = rig.pins.pin(27)  # gpio-basic: a PWM LED on BCM 27
        assert led_pin.state == 0  # idle: off
        button = rig.rt.button
        assert button is not None
        button.press()
        await until(lambda: seen[-1:] == ["listening"], "listening")
        await until(lambda: led_pin.state == 1, "solid while listening")
        await rig.say_into_mic()
        await until(lambda: "speaking" in seen, "speaking")
        await until(lambda: seen[-1] == "idle", "idle again")
        assert seen == ["listening", "thinking", "speaking", "idle"]
        await until(lambda: led_pin.state == 0, "off when idle")
