"""kind = "cascade" through the real daemon runtime: recogniser → chat model →
speech, with a code-prompt tool call in between, all from the cascade sim."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from gpiozero.pins.mock import MockFactory, MockPWMPin
from openai import AsyncOpenAI

from huxleyd.app.parts import Overrides
from huxleyd.app.runtime import Runtime
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.config.load import load_config
from huxleyd.sim.chat import CascadeSim
from tests.e2e.harness import ROOT, SPEED, level_dbfs, until, write_config

DEMO = ROOT / "config" / "scenarios" / "cascade" / "demo.toml"


def cascade_config(
    tmp: Path, *, tts: str = "command", skills: tuple[str, ...] = ("system",), script: Path = DEMO
) -> Path:
    """The e2e configuration with ``kind = "cascade"`` on the cascade simulator."""
    return write_config(
        tmp,
        skills=skills,
        provider_kind="cascade",
        provider_lines=f"""sim_scenario = "{script}"
sim_speed = {SPEED}
[provider.cascade]
native_tools = false
tts = "{tts}"
""",
    )


@asynccontextmanager
async def cascade_runtime(config: Path) -> AsyncIterator[tuple[Runtime, WavBackend, CascadeSim]]:
    """The real runtime on ``config``: a WAV sound card, mock pins, the cascade sim."""
    backend = WavBackend(keep_speaker=True)
    pins = MockFactory(pin_class=MockPWMPin)
    runtime = Runtime(
        load_config(config),
        Overrides(backend=backend, clock=ScaledClock(SPEED), pin_factory=pins, env={}),
    )
    try:
        await runtime.start()
        sim = runtime.parts.simulator
        assert runtime.is_simulator and isinstance(sim, CascadeSim)
        yield runtime, backend, sim
    finally:
        await runtime.close()
        pins.close()


async def test_a_text_turn_calls_a_tool_through_the_code_prompt_and_speaks(tmp_path: Path) -> None:
    async with cascade_runtime(cascade_config(tmp_path)) as (runtime, backend, sim):
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
    config = cascade_config(tmp_path, tts="elevenlabs", skills=("system", "brain"), script=script)
    async with cascade_runtime(config) as (runtime, _, sim):
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
