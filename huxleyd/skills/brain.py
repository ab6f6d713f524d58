"""The ask_brain skill: hard questions go to a stronger text model, and the
voice reads its answer out verbatim.

Written only against ``huxley_sdk`` (plus the ``openai`` package). The
realtime model calls ``ask_brain(query)``; the skill asks the OpenAI
Responses API (``model`` from config) with a timeout and a length limit
suited to speech, and returns :class:`~huxley_sdk.SpeakVerbatim` so the
answer is read word for word, not paraphrased. The tool output tells the
model the answer was delivered, so it does not speak again. A timeout or an
error comes back as an error output the model turns into a short apology in
the persona's own voice.

Config (``[skills.brain]``): ``model`` (default ``gpt-5.2``), ``base_url``
(an OpenAI-compatible endpoint; unset = OpenAI), ``timeout_s`` (20),
``max_words`` (120), ``key_file`` (a file holding the API key; else the
skill's secret ``api_key``, else ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, ClassVar

from openai import AsyncOpenAI, OpenAIError

from huxley_sdk import SkillContext, SpeakVerbatim, ToolDefinition, ToolResult

DEFAULT_MODEL = "gpt-5.2"
DEFAULT_TIMEOUT_S = 20.0
TOOL_BUDGET_MARGIN_S = 2.0
"""The tool's budget is the brain's timeout plus this (the brain gives up first)."""
DEFAULT_MAX_WORDS = 120

SPOKEN_STYLE = (
    "Your answer will be read aloud, word for word, by a voice assistant. "
    "Answer in at most {words} words of plain spoken sentences: no lists, no "
    "markdown, no URLs, no symbols a voice cannot say. Numbers as a person says them."
)


class BrainSkill:
    """``ask_brain``: a stronger model's answer, read out verbatim."""

    name = "brain"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "model": {"type": "string", "minLength": 1},
            "base_url": {"type": "string", "minLength": 1},
            "key_file": {"type": "string", "minLength": 1},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0},
            "max_words": {"type": "number", "exclusiveMinimum": 0},
            "timezone": {"type": "string"},
        },
        "additionalProperties": False,
    }
    """``[skills.brain]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(self) -> None:
        self._ctx: SkillContext | None = None
        self._client: AsyncOpenAI | None = None
        self._model = DEFAULT_MODEL
        self._timeout_s = DEFAULT_TIMEOUT_S
        self._max_words = DEFAULT_MAX_WORDS

    @property
    def tools(self) -> list[ToolDefinition]:
        return [
            ToolDefinition(
                name="ask_brain",
                description=(
                    "For complex or knowledge questions (explanations, facts, advice, "
                    "planning): ask a stronger model. Its answer is read to the user "
                    "verbatim; after calling this, say nothing more."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "minLength": 1,
                            "description": "The user's question, complete and self-contained.",
                        }
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
            )
        ]

    @property
    def tool_timeouts_s(self) -> dict[str, float]:
        """``ask_brain``'s budget (a huxleyd extension): longer than the host's
        default, so the brain's own timeout answers first, with its message."""
        return {"ask_brain": self._timeout_s + TOOL_BUDGET_MARGIN_S}

    async def setup(self, ctx: SkillContext) -> None:
        self._ctx = ctx
        config = ctx.config
        self._model = str(config.get("model", DEFAULT_MODEL))
        self._timeout_s = _number(config, "timeout_s", DEFAULT_TIMEOUT_S)
        self._max_words = int(_number(config, "max_words", DEFAULT_MAX_WORDS))
        key = await self._api_key(ctx)
        base_url = config.get("base_url")
        if key is None:
            ctx.logger.warning(
                "brain_no_key", hint="set [skills.brain] key_file, or the skill secret api_key"
            )
        self._client = AsyncOpenAI(
            api_key=key or "missing-key",
            base_url=str(base_url) if base_url else None,
            max_retries=0,  # one answer within the timeout beats three late ones
        )

    async def _api_key(self, ctx: SkillContext) -> str | None:
        key_file = ctx.config.get("key_file")
        if key_file:
            return await asyncio.to_thread(_read_key, str(key_file))
        return await ctx.secrets.get("api_key") or os.environ.get("OPENAI_API_KEY")

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        if tool_name != "ask_brain":
            raise ValueError(f"brain skill has no tool {tool_name!r}")
        assert self._client is not None and self._ctx is not None, "setup() was not called"
        query = str(args["query"]).strip()
        try:
            answer = await asyncio.wait_for(self._ask(query), timeout=self._timeout_s)
        except TimeoutError:
            await self._ctx.logger.awarning("brain_timeout", timeout_s=self._timeout_s)
            return _failure("timeout", f"the brain gave no answer within {self._timeout_s:g} s")
        except OpenAIError as exc:
            await self._ctx.logger.awarning("brain_failed", error=type(exc).__name__)
            return _failure("unavailable", str(exc)[:200])
        if not answer:
            return _failure("empty", "the brain gave an empty answer")
        await self._ctx.logger.ainfo("brain_answered", words=len(answer.split()))
        return ToolResult(
            output=json.dumps(
                {
                    "delivered": True,
                    "answer": answer,  # context for follow-up questions
                    "note": "The answer is being read to the user verbatim. Do not repeat it.",
                }
            ),
            side_effect=SpeakVerbatim(answer),
        )

    async def _ask(self, query: str) -> str:
        assert self._client is not None
        response = await self._client.responses.create(
            model=self._model,
            instructions=SPOKEN_STYLE.format(words=self._max_words),
            input=query,
            max_output_tokens=self._max_words * 3,
        )
        return response.output_text.strip()

    async def teardown(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _read_key(raw: str) -> str | None:
    path = Path(raw).expanduser()
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError as exc:
        raise ValueError(f"brain: config key 'key_file' = {path}: {exc.strerror}") from exc


def _failure(error: str, message: str) -> ToolResult:
    return ToolResult(
        output=json.dumps(
            {
                "error": f"brain_{error}",
                "message": message,
                "instruction": "Tell the user briefly that you could not get an answer right now.",
            }
        )
    )


def _number(config: dict[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"brain: config key {key!r} must be a positive number, got {value!r}")
    return float(value)
