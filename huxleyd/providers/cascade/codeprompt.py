"""Tool calls for chat models without native function calling ("code prompt").

Layer: pure logic, no I/O. The tools are shown to the model as Python
function stubs in the system prompt (:func:`render_tools_prompt`); the model
answers with at most one short sentence and exactly one
``<code>name(arg='value')</code>`` block; :func:`parse_reply` turns that
reply into the speech and one validated call.

Safety: the block is parsed with :mod:`ast` and never evaluated. A call must
be a plain name called with keyword arguments only, each value a literal
(strings, numbers, booleans, None, lists and dicts of those), read with
:func:`ast.literal_eval`. Anything else — positional arguments, names,
attributes, calls, comprehensions, ``**kwargs`` — is rejected, as are unknown
tools and arguments that fail the tool's JSON schema
(:func:`huxleyd.skillhost.argcheck.check_arguments`). A rejected call is never run:
the caller hands :attr:`CodeReply.errors` back to the model instead.
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from huxleyd.skillhost.argcheck import check_arguments

OPEN_TAG = "<code>"
CLOSE_TAG = "</code>"
_OPEN = re.compile(re.escape(OPEN_TAG), re.IGNORECASE)
_CLOSE = re.compile(re.escape(CLOSE_TAG), re.IGNORECASE)
"""Models write the tags in any case (``<CODE>``); both are markup, never words."""
MAX_CALL_CHARS = 4000
"""A longer block is refused before parsing (a runaway generation, not a call)."""

_JSON_TO_PY = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
    "object": "dict",
}

INSTRUCTIONS = """\
To call a tool, put exactly one named-argument function call inside <code>...</code>:
<code>function_name(required_arg='value')</code>

Rules:
- You may say one brief natural sentence before the tool call; for slow information tools, briefly say that you will check.
- Use named arguments only; quote strings. Omit optional args instead of placeholder values.
- Only one tool call may appear in a response.
- After a tool result, answer the user in plain speech, without <code>."""


# ---------------------------------------------------------------- rendering


def annotation(schema: Mapping[str, Any]) -> str:
    """The Python annotation for a JSON schema: ``str``, ``list[int]``, ``Literal['a', 'b']``."""
    if "enum" in schema and isinstance(schema["enum"], list):
        return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(annotation({**schema, "type": k}) for k in kind) or "Any"
    if kind == "array":
        items = schema.get("items")
        return f"list[{annotation(items)}]" if isinstance(items, Mapping) else "list"
    if isinstance(kind, str) and kind in _JSON_TO_PY:
        return _JSON_TO_PY[kind]
    return "Any"


def _parameters(tool: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    params = tool.get("parameters") or {}
    properties = params.get("properties") or {}
    required = [name for name in params.get("required") or [] if name in properties]
    return dict(properties), required


def _signature(properties: Mapping[str, Any], required: list[str]) -> str:
    """Required arguments first (Python wants them before defaults), then optional ones."""
    parts = [f"{name}: {annotation(properties[name])}" for name in required]
    for name, schema in properties.items():
        if name in required:
            continue
        default = schema.get("default") if isinstance(schema, Mapping) else None
        parts.append(f"{name}: {annotation(schema)} = {default!r}")
    return ", ".join(parts)


def _arg_doc(name: str, schema: Mapping[str, Any]) -> str:
    text = str(schema.get("description") or "").strip()
    extras = []
    if "enum" in schema:
        extras.append("one of " + ", ".join(repr(v) for v in schema["enum"]))
    for key, label in (("minimum", "min"), ("maximum", "max")):
        if key in schema:
            extras.append(f"{label} {schema[key]}")
    if "default" in schema:
        extras.append(f"default {schema['default']!r}")
    if extras:
        text = f"{text} ({'; '.join(extras)})" if text else "; ".join(extras)
    return f"        {name}: {text}".rstrip()


def render_tool(tool: Mapping[str, Any], *, include_args_doc: bool = True) -> str:
    """One tool as a Python stub: ``def name(arg: type, opt: type = None):`` + docstring.

    ``include_args_doc`` adds an ``Args:`` section with each argument's
    description, enum values, bounds and default (more tokens, better for
    small models); without it only the annotations (enums as ``Literal``)
    describe the arguments.
    """
    properties, required = _parameters(tool)
    lines = [f"def {tool['name']}({_signature(properties, required)}):"]
    description = str(tool.get("description") or "").strip()
    doc = [f"    {line}".rstrip() for line in description.splitlines()] or ["    (no description)"]
    if include_args_doc and properties:
        doc += ["", "    Args:", *(_arg_doc(n, s) for n, s in properties.items())]
    doc[0] = '    """' + doc[0].lstrip()
    if len(doc) == 1:
        doc[0] += '"""'
    else:
        doc.append('    """')
    return "\n".join(lines + doc)


def render_tools_prompt(
    tools: Iterable[Mapping[str, Any]], *, include_args_doc: bool = True
) -> str:
    """The system-prompt section listing ``tools`` and how to call them ("" when none)."""
    stubs = [render_tool(tool, include_args_doc=include_args_doc) for tool in tools]
    if not stubs:
        return ""
    return "Available tools:\n\n" + "\n\n".join(stubs) + "\n\n" + INSTRUCTIONS


def render_call(name: str, arguments: Mapping[str, Any]) -> str:
    """A ``<code>`` block calling ``name`` with ``arguments`` (JSON values), as the model should."""
    args = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return f"{OPEN_TAG}{name}({args}){CLOSE_TAG}"


# ---------------------------------------------------------------- parsing


class CallProblem(enum.StrEnum):
    """Why a ``<code>`` block was not run."""

    UNCLOSED_BLOCK = "unclosed_block"
    SYNTAX = "syntax"
    NOT_A_CALL = "not_a_call"
    UNKNOWN_TOOL = "unknown_tool"
    POSITIONAL_ARGUMENT = "positional_argument"
    NON_LITERAL_ARGUMENT = "non_literal_argument"
    INVALID_ARGUMENTS = "invalid_arguments"
    EXTRA_CALL = "extra_call"
    """A second (third…) block in one response; only the first may run."""


@dataclass(frozen=True, slots=True)
class CallError:
    """One rejected block, with a message written for the model."""

    problem: CallProblem
    message: str
    source: str = ""
    """The block's text as the model wrote it (trimmed)."""


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A valid call: run it, answer with its output."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    source: str
    """The call as the model wrote it, for the history."""

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class CodeReply:
    """A model reply split into what to say and what to run.

    ``speech`` is the text outside the blocks (fences and tags removed).
    ``call`` is the first block when it is valid; ``errors`` lists every
    block that will not run (the first when invalid, every later one).
    No block at all: a plain answer, ``call`` None and no errors.
    """

    speech: str
    call: ParsedCall | None
    errors: tuple[CallError, ...]

    def error_report(self) -> str:
        """The errors as one message for the model ("" when none)."""
        if not self.errors:
            return ""
        lines = [f"- {e.message}" for e in self.errors]
        return "Tool call error (nothing was run for these):\n" + "\n".join(lines)


_FENCE = re.compile(r"```[A-Za-z0-9_+-]*")
_OPENING_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*")
_CLOSING_FENCE = re.compile(r"```$")


def _strip_fences(text: str) -> str:
    """Markdown fences and backticks a model puts around a call, at its edges only:
    inside, they may be part of a string argument (``note='```'``)."""
    text = _CLOSING_FENCE.sub("", _OPENING_FENCE.sub("", text.strip()).strip())
    return text.strip().strip("`").strip()


def _speech(parts: list[str]) -> str:
    """The text around the blocks: fences anywhere in it are markup, never words."""
    text = " ".join(_FENCE.sub("", p).strip().strip("`") for p in parts)
    return " ".join(text.split())


def _parses(source: str) -> bool:
    try:
        ast.parse(_strip_fences(source), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _block_end(text: str, start: int) -> int:
    """Where the block opened before ``start`` closes; -1 when it never does.

    Normally the first ``</code>``; when the text up to it does not parse but
    up to a later one does, that one (a string argument containing the tag).
    """
    first = _find(_CLOSE, text, start)
    end = first
    while end >= 0 and not _parses(text[start:end]):
        end = _find(_CLOSE, text, end + len(CLOSE_TAG))
    return end if end >= 0 else first


def _find(tag: re.Pattern[str], text: str, start: int) -> int:
    found = tag.search(text, start)
    return found.start() if found else -1


def split_blocks(text: str) -> tuple[list[str], list[str], bool]:
    """``(outside, blocks, unclosed)``: the text around the ``<code>`` blocks, their
    insides in order, and whether the last block never closes (it is then the
    text after its ``<code>``)."""
    outside: list[str] = []
    blocks: list[str] = []
    pos = 0
    while (start := _find(_OPEN, text, pos)) >= 0:
        outside.append(text[pos:start])
        inner = start + len(OPEN_TAG)
        end = _block_end(text, inner)
        if end < 0:
            blocks.append(text[inner:])
            return outside, blocks, True
        blocks.append(text[inner:end])
        pos = end + len(CLOSE_TAG)
    outside.append(text[pos:])
    return outside, blocks, False


def parse_reply(
    text: str, tools: Mapping[str, Mapping[str, Any]], new_id: Callable[[], str]
) -> CodeReply:
    """Split ``text`` into speech, the first block's call (if valid) and errors.

    ``tools`` maps tool name → its ``parameters`` JSON schema; ``new_id``
    makes a call id for a valid call.
    """
    outside, blocks, unclosed = split_blocks(text)
    speech = _speech(outside)
    if not blocks:
        return CodeReply(speech, None, ())
    errors: list[CallError] = []
    call: ParsedCall | None = None
    first, *extra = blocks
    if unclosed and not extra:
        errors.append(_unclosed(first))
    else:
        result = parse_call(first, tools, new_id)
        if isinstance(result, ParsedCall):
            call = result
        else:
            errors.append(result)
    for block in extra:
        source = _strip_fences(block)
        errors.append(
            CallError(
                CallProblem.EXTRA_CALL,
                f"only one tool call may appear in a response; `{source}` was not run "
                "(call it in your next response if it is still needed)",
                source,
            )
        )
    return CodeReply(speech, call, tuple(errors))


def _unclosed(block: str) -> CallError:
    source = _strip_fences(block)
    return CallError(
        CallProblem.UNCLOSED_BLOCK,
        f"the tool call `{source}` has no closing </code> tag",
        source,
    )


def parse_call(
    block: str, tools: Mapping[str, Mapping[str, Any]], new_id: Callable[[], str]
) -> ParsedCall | CallError:
    """One block's inside → a validated :class:`ParsedCall`, or the reason it is refused."""
    source = _strip_fences(block)
    if len(source) > MAX_CALL_CHARS:
        return CallError(CallProblem.SYNTAX, "the tool call is too long", source[:80])
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        return CallError(CallProblem.SYNTAX, f"`{source}` is not a valid call ({exc.msg})", source)
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
        return CallError(CallProblem.SYNTAX, f"`{source}` is not a valid call ({exc})", source)
    node = tree.body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return CallError(
            CallProblem.NOT_A_CALL,
            f"`{source}` is not a call of a tool by its name, like name(arg='value')",
            source,
        )
    name = node.func.id
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        return CallError(
            CallProblem.UNKNOWN_TOOL, f"there is no tool named {name!r} (tools: {known})", source
        )
    if node.args:
        return CallError(
            CallProblem.POSITIONAL_ARGUMENT,
            f"`{source}` passes arguments by position; name every argument, like arg='value'",
            source,
        )
    arguments = _keyword_arguments(node, name, source)
    if isinstance(arguments, CallError):
        return arguments
    problems = check_arguments(arguments, dict(tools[name]))
    if problems:
        return CallError(CallProblem.INVALID_ARGUMENTS, f"{name}: " + "; ".join(problems), source)
    return ParsedCall(new_id(), name, arguments, source)


def _keyword_arguments(node: ast.Call, name: str, source: str) -> dict[str, Any] | CallError:
    """The call's keyword arguments as JSON values, or why they are refused."""
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return CallError(
                CallProblem.NON_LITERAL_ARGUMENT, f"`{source}` unpacks **arguments", source
            )
        if keyword.arg in arguments:  # ast accepts it; only the compiler would refuse
            return CallError(
                CallProblem.SYNTAX,
                f"`{source}` has keyword argument repeated: {keyword.arg}",
                source,
            )
        value = _literal(keyword.value)
        if isinstance(value, _NotLiteral):
            return CallError(
                CallProblem.NON_LITERAL_ARGUMENT,
                f"argument {keyword.arg!r} of {name} must be a literal value "
                f"(a quoted string, number, True/False/None, or a list), not `{value.text}`",
                source,
            )
        arguments[keyword.arg] = value
    return arguments


@dataclass(frozen=True, slots=True)
class _NotLiteral:
    text: str


def _literal(node: ast.expr) -> Any:
    """The JSON value of a literal expression, or :class:`_NotLiteral`."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NotLiteral(ast.unparse(node))
    converted = _as_json(value)
    return _NotLiteral(ast.unparse(node)) if converted is _REJECT else converted


_REJECT = object()


def _as_json(value: Any) -> Any:
    """Tuples become lists; bytes, sets, complex numbers and non-string keys are refused."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else _REJECT
    if isinstance(value, list | tuple):
        items = [_as_json(v) for v in value]
        return _REJECT if any(i is _REJECT for i in items) else items
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return _REJECT
        out = {k: _as_json(v) for k, v in value.items()}
        return _REJECT if any(v is _REJECT for v in out.values()) else out
    return _REJECT
