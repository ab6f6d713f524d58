"""Scenario files: the shipped ones load; bad ones fail naming file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from huxleyd.errors import ConfigError
from huxleyd.sim.record import Script
from huxleyd.sim.scenario import DEFAULT_REPLY, Scenario, load_scenario, scenario_from_dict

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_scenario_loads(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.turns, f"{path.name} has no turns"
    assert all(turn.responses for turn in scenario.turns)


def test_the_demo_scenario_uses_the_system_skill_tools() -> None:
    demo = load_scenario(SCENARIOS / "demo.toml")
    names = [c.name for t in demo.turns for r in t.responses for c in r.tool_calls]
    assert names == ["get_current_time", "set_volume"]
    assert "simulator" in demo.default_reply


def test_json_scenarios_have_the_same_shape(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"hear": "hi", "responses": [{"say": "Hello."}]}]}))
    assert load_scenario(path).turns[0].responses[0].say == "Hello."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[turns]]\nheer = "x"\n', "turns[0].heer: unknown key"),
        (
            "[[turns]]\n[[turns.responses]]\ntone_hz = 440\n",
            "turns[0].responses[0]: tone_hz needs duration_ms",
        ),
        (
            "[[turns]]\n[[turns.responses]]\ndelay_ms = -5\n",
            "turns[0].responses[0].delay_ms: expected a value between 0",
        ),
        (
            "[[turns]]\n[[turns.responses]]\ntool_calls = [{ arguments = {} }]\n",
            "turns[0].responses[0].tool_calls[0].name: missing",
        ),
        (
            '[[turns]]\n[[turns.responses]]\nstatus = "cancelled"\n',
            "turns[0].responses[0].status: expected one of",
        ),
        ("turns = [\n", "not valid toml"),
    ],
)
def test_bad_scenarios_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_scenario(path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read scenario"):
        load_scenario(tmp_path / "nope.toml")


def test_the_script_walks_turns_and_falls_back_to_the_default_reply() -> None:
    scenario = scenario_from_dict(
        {
            "turns": [
                {"hear": "one", "responses": [{"say": "a"}, {"say": "b"}]},
                {"hear": "two", "responses": [{"say": "c"}]},
            ]
        }
    )
    script = Script(scenario)
    assert script.next_response().say == DEFAULT_REPLY  # before any user turn
    assert script.begin_turn() == "one"
    assert [script.next_response().say for _ in range(3)] == ["a", "b", DEFAULT_REPLY]
    assert script.begin_turn() == "two"
    assert script.next_response().say == "c"
    assert script.begin_turn() == ""  # past the end
    assert script.next_response().say == DEFAULT_REPLY
    assert script.turns_started == 3


def test_a_typed_text_takes_the_turn_that_hears_it_wherever_the_script_stands() -> None:
    """Issue 41: after a press (the script's first turn), ``say "what time is it"``
    answered the second turn ("The volume is now thirty."). A typed text that is
    a turn's ``hear`` takes that turn; speech and other text go on in order."""
    scenario = scenario_from_dict(
        {
            "turns": [
                {"hear": "what time is it", "responses": [{"say": "the time"}]},
                {"hear": "turn it down to thirty", "responses": [{"say": "thirty"}]},
                {"hear": "tell me a story", "responses": [{"say": "once"}]},
            ]
        }
    )
    script = Script(scenario)
    assert script.begin_turn() == "what time is it"  # a press: the next turn
    assert script.begin_turn(typed="What time is it?") == "what time is it"
    assert script.next_response().say == "the time"
    assert script.begin_turn(typed="tell me a  story") == "tell me a story"
    assert script.begin_turn(typed="hello there") == ""  # no turn hears it: the next one
    assert script.next_response().say == DEFAULT_REPLY


def test_tool_call_arguments_are_json_text_unless_given_raw() -> None:
    scenario = scenario_from_dict(
        {
            "turns": [
                {
                    "responses": [
                        {
                            "tool_calls": [
                                {"name": "set_volume", "arguments": {"level": 30}},
                                {"name": "set_volume", "arguments_json": "{not json"},
                            ]
                        }
                    ]
                }
            ]
        }
    )
    first, second = scenario.turns[0].responses[0].tool_calls
    assert json.loads(first.arguments_text()) == {"level": 30}
    assert second.arguments_text() == "{not json"


def test_the_empty_scenario_only_says_it_is_a_simulator() -> None:
    assert Scenario().turns == ()
    assert "simulator, not an AI" in Scenario().default_response.say
