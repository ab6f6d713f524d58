"""The code-prompt method: prompt size with and without argument docs, and parse cost.

Prompt size decides how much of a small local model's context (and of its
prompt-processing time on a Pi) the tools take. Each row measures the
first-party skills' tools rendered as Python stubs with ``include_args_doc``
on, against the same with it off, and against the JSON schemas a native
tool-calling endpoint would get. Tokens are approximated as characters / 4
(the usual rule of thumb for English and code with BPE tokenisers).

Parse cost: the code-prompt parser on a typical reply (a sentence and one
``<code>`` call: extract, ``ast``-parse, literal-evaluate, schema-check)
beside what the native path does for the same call (``json.loads`` of the
arguments and the same schema check), measured in the same run.
"""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable
from typing import Any

from bench import Row
from huxleyd.providers.cascade.codeprompt import parse_reply, render_tools_prompt
from huxleyd.providers.cascade.llm import native_tools
from huxleyd.skillhost.argcheck import check_arguments
from huxleyd.skills.audiobooks import AudiobooksSkill
from huxleyd.skills.memos import MemosSkill
from huxleyd.skills.radio import RadioSkill
from huxleyd.skills.system import SystemSkill
from huxleyd.skills.timers import TimersSkill

CHARS_PER_TOKEN = 4

REPLY = "Sure, starting a tea timer now. <code>set_timer(minutes=4, name='tea')</code>"


def first_party_tools() -> list[dict[str, Any]]:
    skills = (SystemSkill(), TimersSkill(), AudiobooksSkill(), RadioSkill(), MemosSkill())
    return [tool.to_api_format() for skill in skills for tool in skill.tools]


def _best_us(fn: Callable[[], object], number: int = 2000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _size_rows(tools: list[dict[str, Any]]) -> list[Row]:
    with_doc = render_tools_prompt(tools, include_args_doc=True)
    without = render_tools_prompt(tools, include_args_doc=False)
    native = json.dumps(native_tools(tools), separators=(",", ":"))
    n = len(tools)
    return [
        Row(
            "cascade",
            f"{n} tool stubs, args doc on",
            len(with_doc) / CHARS_PER_TOKEN,
            "tokens≈",
            len(without) / CHARS_PER_TOKEN,
            "args doc off",
        ),
        Row(
            "cascade",
            f"{n} tool stubs, args doc off",
            len(without) / CHARS_PER_TOKEN,
            "tokens≈",
            len(native) / CHARS_PER_TOKEN,
            "native tools JSON",
        ),
    ]


def _parse_rows(tools: list[dict[str, Any]]) -> list[Row]:
    schemas = {t["name"]: t["parameters"] for t in tools}
    parsed = parse_reply(REPLY, schemas, lambda: "call_1")
    if parsed.call is None:  # the bench must measure a valid call, not an error path
        raise RuntimeError(f"the bench reply does not parse: {parsed.error_report()}")
    arguments = json.dumps(parsed.call.arguments)
    schema = schemas[parsed.call.name]

    def code_prompt() -> object:
        return parse_reply(REPLY, schemas, lambda: "call_1")

    def native() -> object:
        return check_arguments(json.loads(arguments), schema)

    return [
        Row(
            "cascade",
            "parse <code> call + check",
            _best_us(code_prompt),
            "µs",
            _best_us(native),
            "json.loads + check",
        )
    ]


def run() -> list[Row]:
    tools = first_party_tools()
    return _size_rows(tools) + _parse_rows(tools)
