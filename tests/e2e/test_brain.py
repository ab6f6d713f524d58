"""ask_brain end to end: the brain's text is read verbatim by the voice, once.

The realtime peer is the simulator; the "brain" is the simulator's Responses
API (scripted text, optional delay). The realtime sim records the text an
out-of-band response was asked to read, so the test compares it with the
brain's answer character for character.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.sim.chat import CascadeScript, CascadeSim
from huxleyd.sim.responses_api import BrainReply
from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from tests.e2e.harness import SPEED, Rig, level_dbfs, scenario_skill_installed, until

ANSWER = (
    "Bread rises because yeast eats sugar and breathes out carbon dioxide; "
    "the gluten holds the bubbles, so the dough puffs up like a balloon."
)


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def ask(query: str) -> TurnSpec:
    call = ToolCallSpec(name="ask_brain", arguments={"query": query})
    apology = ResponseSpec(say="Sorry, I could not get an answer.", tone_hz=300.0, duration_ms=300)
    return TurnSpec(responses=(ResponseSpec(tool_calls=(call,)), apology))


def brain_config(brain: CascadeSim, tmp: Path, timeout_s: float = 20.0) -> dict[str, str]:
    key = tmp / "brain.key"
    key.write_text("sk-sim\n")
    return {
        "brain": f'base_url = "{brain.http_url}"\nkey_file = "{key}"\n'
        f'model = "gpt-5.2"\ntimeout_s = {timeout_s}\n'
    }


def in_band_creates(rig: Rig) -> list[object]:
    return [
        e
        for e in rig.sim.received
        if e.type == "response.create" and (e.response is None or e.response.conversation != "none")
    ]


async def test_the_brain_answer_is_read_verbatim_and_the_model_stays_quiet(tmp_path: Path) -> None:
    script = CascadeScript(brain=(BrainReply(text=ANSWER),))
    async with CascadeSim(script, speed=SPEED) as brain:
        scenario = Scenario(turns=(ask("why does bread rise"),))
        config = brain_config(brain, tmp_path)
        async with Rig(tmp_path, scenario, skills=("system", "brain"), skill_config=config) as rig:
            await rig.say_into_mic()
            await until(lambda: rig.sim.record.read_aloud, "the reader was asked to read")
            assert rig.sim.record.read_aloud == [ANSWER]  # verbatim, character for character
            assert brain.brain.requests[0].input == "why does bread rise"
            await until(
                lambda: (
                    rig.rt.parts.coordinator is not None
                    and rig.rt.parts.coordinator.last_turn is not None
                ),
                "turn over",
            )
            output = json.loads(next(iter(rig.sim.record.tool_outputs.values())))
            assert output["delivered"] is True
            # one in-band response (the tool call); no narration asked for after it
            assert len(in_band_creates(rig)) == 1
            reader = [e for e in rig.sim.received if e.type == "response.create"][-1]
            assert reader.response.conversation == "none" and reader.response.tool_choice == "none"
            assert level_dbfs(rig.speaker()) > -40, "the reader's voice reached the speaker"
            assert rig.sim.violations == []


async def test_a_slow_brain_times_out_with_a_spoken_apology(tmp_path: Path) -> None:
    script = CascadeScript(brain=(BrainReply(text=ANSWER, delay_ms=8000),))
    async with CascadeSim(script, speed=1.0) as brain:
        scenario = Scenario(turns=(ask("what is the meaning of life"),))
        config = brain_config(brain, tmp_path, timeout_s=0.3)
        async with Rig(tmp_path, scenario, skills=("system", "brain"), skill_config=config) as rig:
            await rig.say_into_mic()
            await until(lambda: rig.sim.record.responses_done >= 2, "the apology")
            output = json.loads(next(iter(rig.sim.record.tool_outputs.values())))
            assert output["error"] == "brain_timeout"
            assert rig.sim.record.read_aloud == []  # nothing was read: the model apologised
            assert len(in_band_creates(rig)) == 2  # the call, then the narrated apology
            assert rig.sim.violations == []
