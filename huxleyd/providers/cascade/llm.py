"""The cascade's language model: any OpenAI-compatible chat endpoint, streamed.

Layer: adapter (the official ``openai`` client). :class:`ChatModel.stream`
yields text deltas as they arrive and, at the end, the native tool calls
the model made (assembled from their ``tool_calls`` deltas). Closing the
generator early — the consumer is cancelled on barge-in — closes the HTTP
response, which aborts the generation on the server.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class NativeCall:
    """A complete native tool call (``arguments_json`` as the model wrote it)."""

    call_id: str
    name: str
    arguments_json: str


def native_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Provider-neutral declarations → the chat API's ``tools`` shape."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description") or "",
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


def token_limit_parameter(base_url: str) -> str:
    """``max_completion_tokens`` for OpenAI itself (its newer models refuse
    ``max_tokens``); ``max_tokens`` for other servers (llama.cpp, Ollama), which
    all understand it."""
    host = urlsplit(base_url).hostname or ""
    return "max_completion_tokens" if host.endswith("openai.com") else "max_tokens"


class ChatModel:
    """One model at one endpoint. ``stream(messages, tools)`` per response."""

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str,
        max_output_tokens: int = 400,
        temperature: float | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self._client = client
        self._model = model
        self._options: dict[str, Any] = {
            token_limit_parameter(str(client.base_url)): max_output_tokens
        }
        if temperature is not None:
            self._options["temperature"] = temperature
        self._timeout_s = timeout_s

    @property
    def model(self) -> str:
        return self._model

    @property
    def client(self) -> AsyncOpenAI:
        return self._client

    async def stream(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> AsyncGenerator[TextDelta | NativeCall, None]:
        """Text deltas as they come, then the native calls (``tools`` in the chat shape)."""
        options = dict(self._options)
        if tools:
            options["tools"] = cast("list[ChatCompletionToolParam]", list(tools))
        stream = await self._client.chat.completions.create(
            model=self._model,
            messages=cast("list[ChatCompletionMessageParam]", list(messages)),
            stream=True,
            timeout=self._timeout_s,
            **options,
        )
        calls: dict[int, dict[str, str]] = {}
        async with stream:
            async for chunk in stream:
                if not chunk.choices:
                    continue  # a usage-only chunk
                delta = chunk.choices[0].delta
                if delta.content:
                    yield TextDelta(delta.content)
                for part in delta.tool_calls or ():
                    call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = part.id or call["id"]
                    if part.function is not None:
                        call["name"] += part.function.name or ""
                        call["arguments"] += part.function.arguments or ""
        for index in sorted(calls):
            call = calls[index]
            yield NativeCall(call["id"] or f"call_{index}", call["name"], call["arguments"] or "{}")
