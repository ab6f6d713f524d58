"""The code-prompt method: tools rendered as Python stubs, replies parsed with ast."""

from __future__ import annotations

import ast
import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.providers.cascade.codeprompt import (
    CallProblem,
    annotation,
    parse_reply,
    render_call,
    render_tool,
    render_tools_prompt,
)

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Get current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name to look up"},
            "units": {
                "type": "string",
                "enum": ["celsius", "fahrenheit"],
                "description": "Temperature units",
            },
        },
        "required": ["city"],
    },
}
TIMER: dict[str, Any] = {
    "name": "set_timer",
    "description": "Start a timer.",
    "parameters": {
        "type": "object",
        "properties": {
            "seconds": {"type": "integer", "minimum": 1, "description": "How long"},
            "label": {"type": "string", "default": "timer"},
            "loud": {"type": "boolean"},
            "factor": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["seconds"],
        "additionalProperties": False,
    },
}
TOOLS: dict[str, dict[str, Any]] = {t["name"]: t["parameters"] for t in (WEATHER, TIMER)}


def ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"call_{next(counter)}"


# ---------------------------------------------------------------- rendering


def test_a_tool_renders_as_a_stub_with_required_args_first_and_an_args_section() -> None:
    stub = render_tool(WEATHER, include_args_doc=True)
    assert stub.splitlines()[0] == (
        "def get_weather(city: str, units: Literal['celsius', 'fahrenheit'] = None):"
    )
    assert '"""Get current weather for a city.' in stub
    assert "        city: The city name to look up" in stub
    assert "        units: Temperature units (one of 'celsius', 'fahrenheit')" in stub
    ast.parse(stub)  # a valid Python function


def test_without_args_doc_the_stub_keeps_annotations_and_drops_argument_text() -> None:
    stub = render_tool(WEATHER, include_args_doc=False)
    assert "Args:" not in stub and "city name" not in stub
    assert stub.endswith('"""Get current weather for a city."""')
    ast.parse(stub)


def test_defaults_bounds_and_types_are_rendered() -> None:
    stub = render_tool(TIMER)
    assert stub.splitlines()[0] == (
        "def set_timer(seconds: int, label: str = 'timer', loud: bool = None, "
        "factor: float = None, tags: list[str] = None):"
    )
    assert "        seconds: How long (min 1)" in stub
    assert "        label: default 'timer'" in stub
    ast.parse(stub)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "object"}, "dict"),
        ({"type": "null"}, "None"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
        ({"type": "array"}, "list"),
        ({"enum": [1, 2]}, "Literal[1, 2]"),
        ({}, "Any"),
    ],
)
def test_json_schema_types_map_to_python_annotations(schema: Any, expected: str) -> None:
    assert annotation(schema) == expected


def test_the_prompt_lists_tools_and_the_calling_rules() -> None:
    prompt = render_tools_prompt([WEATHER, TIMER])
    assert prompt.startswith("Available tools:\n\ndef get_weather(")
    assert "def set_timer(" in prompt
    assert "<code>function_name(required_arg='value')</code>" in prompt
    assert "Only one tool call may appear in a response." in prompt
    assert render_tools_prompt([]) == ""


def test_args_doc_makes_the_prompt_longer() -> None:
    short = render_tools_prompt([WEATHER, TIMER], include_args_doc=False)
    long = render_tools_prompt([WEATHER, TIMER], include_args_doc=True)
    assert len(short) < len(long)


# ---------------------------------------------------------------- the table of replies

GOOD: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "leading sentence",
        "Sure, let me check that for you. <code>get_weather(city='Paris', units='celsius')</code>",
        "Sure, let me check that for you.",
        {"city": "Paris", "units": "celsius"},
    ),
    (
        "whitespace and newlines inside the block",
        "One moment.\n<code>\n  get_weather(\n      city = 'Oslo' ,\n  )\n</code>\n",
        "One moment.",
        {"city": "Oslo"},
    ),
    (
        "nested quotes",
        """<code>get_weather(city="O'Hare \\"airport\\"")</code>""",
        "",
        {"city": 'O\'Hare "airport"'},
    ),
    (
        "numbers, booleans and lists",
        "Starting it. <code>set_timer(seconds=90, loud=True, factor=-1.5, tags=['tea', 'kitchen'])"
        "</code>",
        "Starting it.",
        {"seconds": 90, "loud": True, "factor": -1.5, "tags": ["tea", "kitchen"]},
    ),
    (
        "a tuple is taken as a list",
        "<code>set_timer(seconds=5, tags=('a',))</code>",
        "",
        {"seconds": 5, "tags": ["a"]},
    ),
    (
        "markdown fences around the call",
        "Checking.\n```python\n<code>get_weather(city='Rome')</code>\n```",
        "Checking.",
        {"city": "Rome"},
    ),
    (
        "markdown fences inside the block",
        "<code>```python\nget_weather(city='Rome')\n```</code>",
        "",
        {"city": "Rome"},
    ),
    (
        "inline backticks inside the block",
        "<code>`get_weather(city='Lyon')`</code>",
        "",
        {"city": "Lyon"},
    ),
    (
        "text after the call is speech too",
        "<code>get_weather(city='Nice')</code> Just a second.",
        "Just a second.",
        {"city": "Nice"},
    ),
    (
        "a string argument holding the closing tag",
        "<code>get_weather(city='a</code>b')</code> Okay.",
        "Okay.",
        {"city": "a</code>b"},
    ),
    (
        "a string argument holding a markdown fence",
        "<code>get_weather(city='```python x')</code>",
        "",
        {"city": "```python x"},
    ),
    (
        "unicode",
        "<code>get_weather(city='Zürich — 東京')</code>",
        "",
        {"city": "Zürich — 東京"},
    ),
]


@pytest.mark.parametrize(("label", "reply", "speech", "args"), GOOD, ids=[g[0] for g in GOOD])
def test_valid_calls_are_parsed(label: str, reply: str, speech: str, args: dict[str, Any]) -> None:
    parsed = parse_reply(reply, TOOLS, ids())
    assert parsed.errors == ()
    assert parsed.speech == speech
    assert parsed.call is not None
    assert parsed.call.arguments == args
    assert parsed.call.call_id == "call_1"
    assert json.loads(parsed.call.arguments_json) == args


BAD: list[tuple[str, str, CallProblem, str]] = [
    (
        "missing required argument",
        "<code>get_weather(units='celsius')</code>",
        CallProblem.INVALID_ARGUMENTS,
        "city: required argument missing",
    ),
    (
        "wrong enum",
        "<code>get_weather(city='Paris', units='kelvin')</code>",
        CallProblem.INVALID_ARGUMENTS,
        "expected one of ['celsius', 'fahrenheit']",
    ),
    (
        "wrong type",
        "<code>set_timer(seconds='ten')</code>",
        CallProblem.INVALID_ARGUMENTS,
        "expected integer",
    ),
    (
        "below the minimum",
        "<code>set_timer(seconds=0)</code>",
        CallProblem.INVALID_ARGUMENTS,
        "below the minimum",
    ),
    (
        "unknown argument",
        "<code>set_timer(seconds=3, colour='red')</code>",
        CallProblem.INVALID_ARGUMENTS,
        "colour: unknown argument",
    ),
    (
        "unknown tool",
        "<code>launch_rocket(target='moon')</code>",
        CallProblem.UNKNOWN_TOOL,
        "no tool named 'launch_rocket'",
    ),
    (
        "positional argument",
        "<code>get_weather('Paris')</code>",
        CallProblem.POSITIONAL_ARGUMENT,
        "by position",
    ),
    (
        "call inside an argument",
        "<code>get_weather(city=input('city?'))</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "input('city?')",
    ),
    (
        "name as an argument",
        "<code>set_timer(seconds=3, loud=true)</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "True/False/None",
    ),
    (
        "attribute as an argument",
        "<code>get_weather(city=os.environ)</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "os.environ",
    ),
    (
        "comprehension",
        "<code>set_timer(seconds=3, tags=[t for t in 'ab'])</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "for t in",
    ),
    (
        "arithmetic",
        "<code>set_timer(seconds=60*60)</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "60 * 60",
    ),
    (
        "set literal",
        "<code>set_timer(seconds=3, tags={'a'})</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "{'a'}",
    ),
    (
        "bytes",
        "<code>get_weather(city=b'Paris')</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "b'Paris'",
    ),
    (
        "kwargs unpacking",
        "<code>get_weather(**{'city': 'x'})</code>",
        CallProblem.NON_LITERAL_ARGUMENT,
        "unpacks",
    ),
    (
        "attribute call",
        "<code>os.system(cmd='ls')</code>",
        CallProblem.NOT_A_CALL,
        "not a call of a tool",
    ),
    ("not a call", "<code>get_weather</code>", CallProblem.NOT_A_CALL, "not a call"),
    ("statement", "<code>import os</code>", CallProblem.SYNTAX, "not a valid call"),
    (
        "broken syntax",
        "<code>get_weather(city='Paris'</code>",
        CallProblem.SYNTAX,
        "not a valid call",
    ),
    (
        "repeated keyword",
        "<code>get_weather(city='a', city='b')</code>",
        CallProblem.SYNTAX,
        "repeated",
    ),
    (
        "unclosed block",
        "Let me see. <code>get_weather(city='Paris')",
        CallProblem.UNCLOSED_BLOCK,
        "no closing </code>",
    ),
]


@pytest.mark.parametrize(("label", "reply", "problem", "says"), BAD, ids=[b[0] for b in BAD])
def test_bad_calls_are_errors_and_never_calls(
    label: str, reply: str, problem: CallProblem, says: str
) -> None:
    made: list[str] = []

    def new_id() -> str:
        made.append("x")
        return "x"

    parsed = parse_reply(reply, TOOLS, new_id)
    assert parsed.call is None
    assert [e.problem for e in parsed.errors] == [problem]
    assert says in parsed.errors[0].message
    assert made == []  # no id was even handed out
    assert parsed.error_report().startswith("Tool call error (nothing was run for these):")


def test_an_unclosed_block_is_not_spoken() -> None:
    parsed = parse_reply("Let me see. <code>get_weather(city='Paris')", TOOLS, ids())
    assert parsed.speech == "Let me see."


def test_a_second_block_is_refused_and_only_the_first_runs() -> None:
    reply = "Both. <code>get_weather(city='A')</code> and <code>get_weather(city='B')</code>"
    parsed = parse_reply(reply, TOOLS, ids())
    assert parsed.call is not None and parsed.call.arguments == {"city": "A"}
    assert [e.problem for e in parsed.errors] == [CallProblem.EXTRA_CALL]
    assert "get_weather(city='B')` was not run" in parsed.errors[0].message
    assert parsed.speech == "Both. and"


def test_two_blocks_with_a_bad_first_run_nothing() -> None:
    reply = "<code>get_weather('A')</code><code>get_weather(city='B')</code>"
    parsed = parse_reply(reply, TOOLS, ids())
    assert parsed.call is None
    assert [e.problem for e in parsed.errors] == [
        CallProblem.POSITIONAL_ARGUMENT,
        CallProblem.EXTRA_CALL,
    ]


def test_a_closed_block_then_an_unclosed_one() -> None:
    parsed = parse_reply("<code>get_weather(city='A')</code><code>get_weather(", TOOLS, ids())
    assert parsed.call is not None
    assert [e.problem for e in parsed.errors] == [CallProblem.EXTRA_CALL]


def test_no_block_is_a_plain_answer() -> None:
    parsed = parse_reply("It is sunny in Paris, 21 degrees.", TOOLS, ids())
    assert parsed.call is None and parsed.errors == ()
    assert parsed.speech == "It is sunny in Paris, 21 degrees."
    assert parsed.error_report() == ""


def test_a_huge_block_is_refused_without_parsing() -> None:
    parsed = parse_reply("<code>get_weather(city='" + "a" * 5000 + "')</code>", TOOLS, ids())
    assert parsed.call is None and parsed.errors[0].problem is CallProblem.SYNTAX


def test_a_tool_without_parameters_is_called_with_empty_parentheses() -> None:
    tools = {"get_current_time": {"type": "object", "properties": {}}}
    parsed = parse_reply("<code>get_current_time()</code>", tools, ids())
    assert parsed.call is not None and parsed.call.arguments == {}


# ---------------------------------------------------------------- render → parse round trip

_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=40
)
_scalar = st.one_of(
    _text,
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_value = st.one_of(_scalar, st.lists(_scalar, max_size=5))
_names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True).filter(
    lambda n: n not in {"if", "in", "is", "or", "as", "def", "for", "and", "not", "del", "try"}
)


@settings(max_examples=300, deadline=None)
@given(args=st.dictionaries(_names, _value, max_size=6), lead=_text)
def test_render_then_parse_round_trips_any_valid_argument_set(
    args: dict[str, Any], lead: str
) -> None:
    tools = {"anything": {"type": "object", "properties": {}}}
    lead = lead.replace("<code>", "").replace("`", "")
    parsed = parse_reply(lead + " " + render_call("anything", args), tools, ids())
    assert parsed.errors == ()
    assert parsed.call is not None
    assert parsed.call.name == "anything"
    assert parsed.call.arguments == args
    assert json.loads(parsed.call.arguments_json) == args


@settings(max_examples=200, deadline=None)
@given(city=_text, units=st.sampled_from(["celsius", "fahrenheit"]), with_units=st.booleans())
def test_round_trip_through_a_real_schema(city: str, units: str, with_units: bool) -> None:
    args = {"city": city, "units": units} if with_units else {"city": city}
    parsed = parse_reply(render_call("get_weather", args), TOOLS, ids())
    assert parsed.call is not None and parsed.call.arguments == args


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_without_raising(reply: str) -> None:
    parsed = parse_reply(reply, TOOLS, ids())
    assert parsed.call is None or parsed.call.name in TOOLS
