"""Tool arguments (and a skill's configuration table) checked against a JSON
Schema subset before the skill sees them: each problem names its path."""

from __future__ import annotations

from typing import Any

import pytest

from huxleyd.skillhost.argcheck import check_arguments, check_value

VOLUME = {
    "type": "object",
    "properties": {
        "level": {"type": "integer", "minimum": 0, "maximum": 100},
        "mode": {"enum": ["set", "step"]},
        "ramp_s": {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 10},
        "label": {"type": "string", "minLength": 1, "maxLength": 5},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "kind": {"const": "volume"},
        "loud": {"type": "boolean"},
    },
    "required": ["level"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_problems() -> None:
    args = {"level": 40, "mode": "set", "ramp_s": 0.5, "label": "x", "tags": ["a"], "loud": True}
    assert check_arguments(args, VOLUME) == []
    assert check_arguments({"level": 40.0, "ramp_s": None}, VOLUME) == []  # 40.0 is an integer


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({}, "arguments.level: required argument missing"),
        ({"level": "40"}, "arguments.level: expected integer, got '40'"),
        ({"level": True}, "arguments.level: expected integer, got True"),
        ({"level": 40.5}, "arguments.level: expected integer, got 40.5"),
        ({"level": 140}, "arguments.level: 140 is above the maximum 100"),
        ({"level": -1}, "arguments.level: -1 is below the minimum 0"),
        ({"level": 1, "mode": "max"}, "arguments.mode: expected one of ['set', 'step'], got 'max'"),
        ({"level": 1, "ramp_s": 0}, "arguments.ramp_s: expected a value above 0, got 0"),
        ({"level": 1, "ramp_s": 10}, "arguments.ramp_s: expected a value below 10, got 10"),
        ({"level": 1, "ramp_s": "1"}, "arguments.ramp_s: expected number or null, got '1'"),
        ({"level": 1, "label": ""}, "arguments.label: shorter than 1 characters"),
        ({"level": 1, "label": "toolong"}, "arguments.label: longer than 5 characters"),
        ({"level": 1, "tags": []}, "arguments.tags: fewer than 1 items"),
        ({"level": 1, "tags": ["a", "b", "c"]}, "arguments.tags: more than 2 items"),
        ({"level": 1, "tags": ["a", 2]}, "arguments.tags[1]: expected string, got 2"),
        ({"level": 1, "kind": "radio"}, "arguments.kind: expected 'volume', got 'radio'"),
        ({"level": 1, "volume": 3}, "arguments.volume: unknown argument"),
    ],
)
def test_each_problem_names_the_argument(args: dict[str, Any], problem: str) -> None:
    assert check_arguments(args, VOLUME) == [problem]


def test_arguments_that_are_not_an_object_are_one_problem() -> None:
    assert check_arguments([1], VOLUME) == ["arguments: expected a JSON object, got [1]"]
    assert check_arguments({"x": 1}, {"properties": {}}) == []  # no type: an object all the same


def test_unknown_keywords_are_ignored_and_several_problems_all_reported() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}
    assert check_arguments({"a": "not a uri"}, schema) == []
    assert check_arguments({"level": 500, "volume": 1}, VOLUME) == [
        "arguments.level: 500 is above the maximum 100",
        "arguments.volume: unknown argument",
    ]


def test_a_config_table_checks_extra_keys_against_additional_properties() -> None:
    stations = {
        "type": "object",
        "properties": {"default": {"type": "string"}},
        "additionalProperties": {"type": "string", "minLength": 1},
    }
    table = {"default": "jazz", "jazz": "http://x/jazz", "rock": 3, "blank": ""}
    assert check_value(table, stations, "skills.radio") == [
        "skills.radio.rock: expected string, got 3",
        "skills.radio.blank: shorter than 1 characters",
    ]
