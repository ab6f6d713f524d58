"""End to end: mock button → WAV mic → coordinator → simulator → WAV speaker.

The scenario suite (info tool, PlaySound order, AudioStream, SetVolume,
barge-in, failing tools, dropped connection, text turns) runs once per
provider kind in ``test_provider_matrix.py``; what is not about the provider
lives here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from huxleyd.sim.scenario import ResponseSpec, Scenario, TurnSpec
from tests.e2e.harness import Rig, scenario_skill_installed, until


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def turn(*responses: ResponseSpec, hear: str = "") -> TurnSpec:
    return TurnSpec(hear=hear, responses=responses)


def speech(ms: int = 800, hz: float = 440.0) -> ResponseSpec:
    return ResponseSpec(say="words", tone_hz=hz, duration_ms=ms)


def idle(rig: Rig) -> bool:
    coordinator = rig.rt.parts.coordinator
    return coordinator is not None and coordinator.state.value == "idle"


async def test_the_led_follows_the_turn_on_the_mock_pin(tmp_path: Path) -> None:
    scenario = Scenario(
        turns=(turn(ResponseSpec(delay_ms=400, say="x", tone_hz=440.0, duration_ms=800)),)
    )
    async with Rig(tmp_path, scenario) as rig:
        leds = rig.rt.parts.leds
        seen: list[str] = []
        original = leds.set_state

        def record(state: Any) -> None:
            if not seen or seen[-1] != state.value:
                seen.append(state.value)
            original(state)

        leds.set_state = record  # type: ignore[method-assign]
        led_pin = rig.pins.pin(27)  # gpio-basic: a PWM LED on BCM 27
        assert led_pin.state == 0  # idle: off
        button = rig.rt.parts.button
        button.press()
        await until(lambda: seen[-1:] == ["listening"], "listening")
        await until(lambda: led_pin.state == 1, "solid while listening")
        await rig.say_into_mic()
        await until(lambda: "speaking" in seen, "speaking")
        await until(lambda: seen[-1] == "idle", "idle again")
        assert seen == ["listening", "thinking", "speaking", "idle"]
        await until(lambda: led_pin.state == 0, "off when idle")
