"""kind = "cascade" through the real daemon runtime: recogniser → chat model →
speech, with a code-prompt tool call in between, all from the cascade sim."""

from __future__ import annotations

import json
from pathlib import Path

from gpiozero.pins.mock import MockFactory, MockPWMPin
from openai import AsyncOpenAI

from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config import load_config
from huxleyd.sim.chat import CascadeSim
from tests.e2e.harness import ROOT, SPEED, level_dbfs, until


def cascade_config(tmp: Path, *, tts: str = "command", brain: str = "") -> Path:
    (tmp / "personas").mkdir()
    (tmp / "personas" / "default.toml").write_text(
        'name = "Test"\ntimezone = "Europe/Madrid"\ninstructions = "Be brief."\n[skills.system]\n'
        + brain
    )
    path = tmp / "huxleyd.toml"
    path.write_text(
        f"""
[daemon]
sounds_dir = "{ROOT / "sounds"}"
[storage]
state_dir = "{tmp / "state"}"
[provider]
kind = "cascade"
sim_scenario = "{ROOT / "config" / "scenarios" / "cascade" / "demo.toml"}"
sim_speed = {SPEED}
silent_response_timeout_s = 20.0
[provider.cascade]
native_tools = false
tts = "{tts}"
[audio]
backend = "wav"
[hardware]
boards_dir = "{ROOT / "hw"}"
[control]
socket_path = "{tmp / "control.sock"}"
socket_group = ""
"""
    )
    return path


async def test_a_text_turn_calls_a_tool_through_the_code_prompt_and_speaks(tmp_path: Path) -> None:
    backend = WavBackend(keep_speaker=True)
    pins = MockFactory(pin_class=MockPWMPin)
    runtime = Runtime(
        load_config(cascade_config(tmp_path)),
        Overrides(backend=backend, clock=ScaledClock(SPEED), pin_factory=pins, env={}),
    )
    try:
        await runtime.start()
        sim = runtime.parts.simulator
        assert runtime.is_simulator and isinstance(sim, CascadeSim)
        coordinator = runtime.parts.coordinator
        coordinator.say("what time is it")
        await until(
            lambda: coordinator.last_turn is not None and coordinator.state.value == "idle",
            "the turn is over",
        )
        last = coordinator.last_turn
        assert last is not None and last.tools == ["get_current_time"], last
        assert last.outcome is not None and last.outcome.value == "answered"
        # the tool's output reached the chat model as the code-prompt tool result
        sent = json.dumps([r.messages for r in sim.chat.requests])
        assert "Europe/Madrid" in sent
        assert level_dbfs(backend.speaker_samples()[:, 0].astype(float)) > -50
        assert sim.violations == []
    finally:
        await runtime.close()
        pins.close()


BRAIN_SCRIPT = """
name = "brain"
[[turns]]
hear = "why is the sky blue"
[[turns.replies]]
text = "Let me think. <code>ask_brain(query='why is the sky blue')</code>"
[[brain]]
text = "Sunlight scatters off the air; blue light scatters most, so the sky looks blue."
"""


async def test_ask_brain_on_the_cascade_reads_the_answer_verbatim_through_the_voice(
    tmp_path: Path,
) -> None:
    script = tmp_path / "brain.toml"
    script.write_text(BRAIN_SCRIPT)
    key = tmp_path / "k"
    key.write_text("sk-sim")
    config = cascade_config(tmp_path, tts="elevenlabs", brain="[skills.brain]\n")
    text = config.read_text().replace(
        str(ROOT / "config" / "scenarios" / "cascade" / "demo.toml"), str(script)
    )
    config.write_text(text)
    backend = WavBackend(keep_speaker=True)
    pins = MockFactory(pin_class=MockPWMPin)
    runtime = Runtime(
        load_config(config),
        Overrides(backend=backend, clock=ScaledClock(SPEED), pin_factory=pins, env={}),
    )
    try:
        await runtime.start()
        sim = runtime.parts.simulator
        assert isinstance(sim, CascadeSim)
        brain = next(s for s in runtime.parts.host.skills if s.name == "brain")
        # The runtime picks the cascade sim's port at start, after the persona
        # was written: point the brain at its Responses API now.
        brain._client = AsyncOpenAI(base_url=sim.http_url, api_key="sk-sim")  # type: ignore[attr-defined]
        coordinator = runtime.parts.coordinator
        coordinator.say("why is the sky blue")
        answer = "Sunlight scatters off the air; blue light scatters most, so the sky looks blue."
        await until(lambda: any(answer in s.text for s in sim.tts.sessions), "the voice read it")
        await until(lambda: coordinator.state.value == "idle", "turn over")
        assert len(sim.brain.requests) == 1
        # the chat model was asked once: no narration after the answer was read
        assert len(sim.chat.requests) == 1
        assert sim.violations == []
    finally:
        await runtime.close()
        pins.close()
