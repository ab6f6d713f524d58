"""The simulator's OpenAI Responses API: ``POST /v1/responses``, not streamed.

Layer: the sim's behaviour for one endpoint (mounted on
:class:`~huxleyd.sim.http.HttpServer` by :class:`~huxleyd.sim.chat.CascadeSim`).
It answers each request with the next scripted :class:`BrainReply` (a
"brain" a voice reads out), after its ``delay_ms`` — long enough, when the
script says so, for a caller's timeout to fire. The answer is a complete
``Response`` object the official client parses (``response.output_text``).
Requests are checked (model, input) and recorded. A simulator, not an AI.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from huxleyd.schema import bounds
from huxleyd.sim.http import ClientGone, Exchange, HttpError, HttpRequest

DEFAULT_BRAIN_REPLY = "This is the huxleyd simulator's brain, not an AI. It has no scripted answer."

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrainReply:
    """One scripted answer of ``POST /v1/responses``."""

    text: str = ""
    delay_ms: int = field(default=0, metadata=bounds(0, 600_000))
    """Wait this long before answering (scaled by the sim's speed)."""
    error_status: int | None = field(default=None, metadata=bounds(400, 599))
    """Answer with this HTTP error instead of ``text``."""
    error_message: str = "simulated error"


@dataclass(slots=True)
class BrainRequest:
    """What a client asked, and how it ended."""

    model: str
    input: Any
    instructions: str | None
    max_output_tokens: int | None
    answered: str | None = None
    """The text sent back; None when it failed or the client left first."""
    client_left: bool = False


def response_object(model: str, text: str, *, max_output_tokens: int | None) -> dict[str, Any]:
    """A complete, completed ``Response`` with one assistant message holding ``text``."""
    n = next(_ids)
    return {
        "id": f"resp_sim{n:05d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": f"msg_sim{n:05d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "max_output_tokens": max_output_tokens,
    }


class ResponsesEndpoint:
    """``POST /v1/responses`` answering from ``replies`` in order (then the default)."""

    def __init__(
        self,
        replies: tuple[BrainReply, ...] = (),
        *,
        speed: float = 1.0,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._replies = list(replies)
        self._speed = speed
        self._on_change = on_change
        self.requests: list[BrainRequest] = []

    def _next(self) -> BrainReply:
        return self._replies.pop(0) if self._replies else BrainReply(text=DEFAULT_BRAIN_REPLY)

    async def handle(self, request: HttpRequest, exchange: Exchange) -> None:
        body = request.json()
        record = _check(body)
        self.requests.append(record)
        self._on_change()
        reply = self._next()
        if reply.delay_ms:
            delay = 0.0 if math.isinf(self._speed) else reply.delay_ms / 1000.0 / self._speed
            await asyncio.sleep(delay)
        if reply.error_status is not None:
            raise HttpError(reply.error_status, reply.error_message)
        try:
            await exchange.send_json(
                200,
                response_object(
                    record.model, reply.text, max_output_tokens=record.max_output_tokens
                ),
            )
        except ClientGone:
            record.client_left = True
            raise
        finally:
            self._on_change()
        record.answered = reply.text


def _check(body: Any) -> BrainRequest:
    if not isinstance(body, dict):
        raise HttpError(400, "the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise HttpError(
            400, "missing required parameter: 'model'", code="missing_required_parameter"
        )
    given = body.get("input")
    if not isinstance(given, str | list) or not given:
        raise HttpError(400, "'input' must be a non-empty string or list of items")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise HttpError(400, "'instructions' must be a string")
    limit = body.get("max_output_tokens")
    if limit is not None and (not isinstance(limit, int) or limit < 16):
        raise HttpError(400, "'max_output_tokens' must be an integer >= 16")
    return BrainRequest(model, given, instructions, limit)
