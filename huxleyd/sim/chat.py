"""The simulator's cascade endpoints: chat completions and transcriptions,
plus :class:`CascadeSim`, which serves them with the Responses API and the
ElevenLabs stream-input socket.

Layer: the sim's behaviour (mounted on :class:`~huxleyd.sim.http.HttpServer`).
A cascade script (TOML or JSON) lists user turns; each has the transcript
the sim "hears" and the chat replies it gives, one per chat request::

    name = "what time is it"

    [[turns]]
    hear = "what time is it"

    [[turns.replies]]                 # a code-prompt tool call
    text = "Let me look. <code>get_current_time()</code>"

    [[turns.replies]]                 # the answer after the tool result
    text = "It is ten past three."

    [[brain]]                         # POST /v1/responses, in order
    text = "The long answer."

A transcription request moves to the next turn (a text turn stays in the
current one). When replies run out the sim says ``default_reply``. A reply
may carry native ``tool_calls`` (streamed as ``tool_calls`` deltas),
pacing (``chunk_chars``, ``chunk_delay_ms``, ``delay_ms``), an HTTP error,
or ``stall_after_chunks`` (stop mid-stream until the client hangs up or
:meth:`CascadeSim.release` is called — how tests catch a barge-in). Every
request is checked against the chat API's rules (roles, tool-call pairing)
and recorded; broken rules are ``violations``. A simulator, not an AI.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huxleyd.errors import ConfigError
from huxleyd.pcm import WavFormatError, parse_wav
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.schema import bounds, build
from huxleyd.sim.elevenlabs import ElevenLabsSim
from huxleyd.sim.http import ClientGone, Exchange, HttpError, HttpRequest, HttpServer
from huxleyd.sim.loopback import StartsAndCloses
from huxleyd.sim.pacing import sleep_script_ms
from huxleyd.sim.record import Changes
from huxleyd.sim.responses_api import BrainReply, ResponsesEndpoint
from huxleyd.sim.scenario import ToolCallSpec
from huxleyd.sim.speech import SynthMode

DEFAULT_REPLY = (
    "This is the huxleyd simulator, not an AI. My script has nothing more for this turn."
)
TRANSCRIBE_MODELS = frozenset(
    {"whisper-1", "gpt-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-transcribe"}
)

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatReply:
    """One scripted chat completion."""

    text: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    """Native function calls, streamed as ``tool_calls`` deltas."""
    delay_ms: int = field(default=0, metadata=bounds(0, 600_000))
    """Wait before the first chunk (time to first token)."""
    chunk_chars: int = field(default=8, metadata=bounds(1, 10_000))
    chunk_delay_ms: int = field(default=0, metadata=bounds(0, 60_000))
    stall_after_chunks: int | None = field(default=None, metadata=bounds(0, 100_000))
    error_status: int | None = field(default=None, metadata=bounds(400, 599))
    error_message: str = "simulated error"


@dataclass(frozen=True, slots=True, kw_only=True)
class CascadeTurn:
    hear: str = ""
    hear_delay_ms: int = field(default=0, metadata=bounds(0, 600_000))
    """The recogniser takes this long (scaled by the sim's speed)."""
    replies: tuple[ChatReply, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CascadeScript:
    """A whole cascade script. ``CascadeScript()``: every answer is the default reply."""

    name: str = "default"
    default_reply: str = DEFAULT_REPLY
    default_hear: str = "hello"
    turns: tuple[CascadeTurn, ...] = ()
    brain: tuple[BrainReply, ...] = ()


def load_cascade_script(path: Path) -> CascadeScript:
    """Read a TOML or JSON cascade script; ConfigError names the file and key."""
    try:
        text = path.read_text(encoding="utf-8")
        table = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read the script ({exc.strerror})") from exc
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), "", f"not valid {path.suffix[1:] or 'TOML'}: {exc}") from exc
    if not isinstance(table, dict):
        raise ConfigError(str(path), "", "expected a table at the top level")
    return build(CascadeScript, table, file=str(path))


def cascade_script_from_dict(table: dict[str, Any], *, name: str = "<script>") -> CascadeScript:
    return build(CascadeScript, table, file=name)


# ---------------------------------------------------------------- records


@dataclass(slots=True)
class ChatRequest:
    """One chat completion request and how its answer went."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    stream: bool
    reply: ChatReply | None = None
    chunks_sent: int = 0
    completed: bool = False
    closed_early: bool = False
    """The client hung up before the end of the stream (an aborted generation)."""


@dataclass(frozen=True, slots=True)
class TranscriptionRequest:
    model: str
    rate_hz: int
    duration_ms: int
    text: str


class ChatEndpoints:
    """``POST /v1/chat/completions`` and ``POST /v1/audio/transcriptions`` from a script."""

    def __init__(
        self,
        script: CascadeScript,
        *,
        speed: float = 1.0,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.script = script
        self._speed = speed
        self._on_change = on_change
        self._turn = -1
        self._reply = 0
        self.release = asyncio.Event()
        self.requests: list[ChatRequest] = []
        self.transcriptions: list[TranscriptionRequest] = []
        self.transcription_requests = 0
        """Requests received (a slow one is counted before it is answered)."""
        self.violations: list[str] = []

    # ------------------------------------------------------------ the script

    def _hear(self) -> CascadeTurn:
        self._turn += 1
        self._reply = 0
        turns = self.script.turns
        if self._turn < len(turns):
            return turns[self._turn]
        return CascadeTurn(hear=self.script.default_hear)

    def _next_reply(self) -> ChatReply:
        self._turn = max(self._turn, 0)
        turns = self.script.turns
        replies = turns[self._turn].replies if self._turn < len(turns) else ()
        self._reply += 1
        if self._reply <= len(replies):
            return replies[self._reply - 1]
        return ChatReply(text=self.script.default_reply)

    async def _sleep_ms(self, ms: int) -> None:
        await sleep_script_ms(ms, self._speed)

    # ------------------------------------------------------------ transcriptions

    async def transcriptions_handler(self, request: HttpRequest, exchange: Exchange) -> None:
        form = request.form()
        model = form["model"].text if "model" in form else ""
        if model not in TRANSCRIBE_MODELS:
            raise HttpError(400, f"unknown transcription model {model!r}", code="invalid_value")
        if "file" not in form or not form["file"].filename:
            raise HttpError(400, "missing required parameter: 'file'")
        rate_hz, duration_ms = _wav_facts(form["file"].value)
        self.transcription_requests += 1
        self._on_change()
        turn = self._hear()
        await self._sleep_ms(turn.hear_delay_ms)
        text = turn.hear
        self.transcriptions.append(TranscriptionRequest(model, rate_hz, duration_ms, text))
        self._on_change()
        response_format = form["response_format"].text if "response_format" in form else "json"
        if response_format == "text":
            await exchange.send_text(200, text)
        else:
            await exchange.send_json(200, {"text": text})

    # ------------------------------------------------------------ chat completions

    async def chat_handler(self, request: HttpRequest, exchange: Exchange) -> None:
        body = request.json()
        record = self._check(body)
        self.requests.append(record)
        reply = record.reply = self._next_reply()
        self._on_change()
        await self._sleep_ms(reply.delay_ms)
        if reply.error_status is not None:
            raise HttpError(reply.error_status, reply.error_message)
        if not record.stream:
            await exchange.send_json(200, _completion(record.model, reply))
            record.completed = True
            self._on_change()
            return
        try:
            await self._stream(record, reply, exchange)
        except ClientGone:
            record.closed_early = True
            raise
        finally:
            self._on_change()

    async def _stream(self, record: ChatRequest, reply: ChatReply, exchange: Exchange) -> None:
        chunk_id = f"chatcmpl-sim{next(_ids):05d}"

        async def send(delta: dict[str, Any], finish: str | None = None) -> None:
            await exchange.send_event(json.dumps(_chunk(chunk_id, record.model, delta, finish)))

        await exchange.start_events()
        await send({"role": "assistant", "content": ""})
        text = reply.text
        for start in range(0, len(text), reply.chunk_chars):
            if (
                reply.stall_after_chunks is not None
                and record.chunks_sent >= reply.stall_after_chunks
            ):
                await self._stall(exchange)
            await send({"content": text[start : start + reply.chunk_chars]})
            record.chunks_sent += 1
            self._on_change()
            await self._sleep_ms(reply.chunk_delay_ms)
        for index, call in enumerate(reply.tool_calls):
            head = {"index": index, "id": f"call_sim{next(_ids):05d}", "type": "function"}
            await send({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
            args = call.arguments_text()
            half = len(args) // 2
            for piece in (args[:half], args[half:]):
                await send({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        await send({}, "tool_calls" if reply.tool_calls else "stop")
        await exchange.send_event("[DONE]")
        await exchange.end_events()
        record.completed = True

    async def _stall(self, exchange: Exchange) -> None:
        gone = asyncio.ensure_future(exchange.client_gone.wait())
        released = asyncio.ensure_future(self.release.wait())
        await asyncio.wait({gone, released}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        released.cancel()
        if exchange.client_gone.is_set():
            raise ClientGone()

    def _check(self, body: Any) -> ChatRequest:
        if not isinstance(body, dict):
            raise HttpError(400, "the body must be a JSON object")
        model, messages, tools = body.get("model"), body.get("messages"), body.get("tools")
        if not isinstance(model, str) or not model:
            raise HttpError(400, "missing required parameter: 'model'")
        if not isinstance(messages, list) or not messages:
            raise HttpError(400, "'messages' must be a non-empty list")
        for problem in check_messages(messages, tools):
            self.violations.append(problem)
        return ChatRequest(model, messages, tools, body.get("stream") is True)


def check_messages(messages: list[Any], tools: Any) -> list[str]:
    """What the chat API would refuse in ``messages``/``tools``: roles, content, tool pairing."""
    problems: list[str] = []
    if tools is not None:
        for i, tool in enumerate(tools if isinstance(tools, list) else [tools]):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if not (
                isinstance(tool, dict)
                and tool.get("type") == "function"
                and isinstance(fn, dict)
                and isinstance(fn.get("name"), str)
            ):
                problems.append(f"tools[{i}]: expected {{type: function, function: {{name, ...}}}}")
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"{where}: unknown role {role!r}")
            continue
        content = message.get("content")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"{where}: tool message for {call_id!r}, which no call awaits")
            open_calls.discard(str(call_id))
            continue
        if open_calls:
            problems.append(
                f"{where}: {role} message while calls {sorted(open_calls)} have no output"
            )
            open_calls.clear()
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls:
            open_calls.update(str(c.get("id")) for c in calls if isinstance(c, dict))
        elif not isinstance(content, str):
            problems.append(f"{where}: content must be a string, got {type(content).__name__}")
    return problems


def _chunk(chunk_id: str, model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def _completion(model: str, reply: ChatReply) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_sim{next(_ids):05d}",
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_text()},
        }
        for c in reply.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-sim{next(_ids):05d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
    }


def _wav_facts(data: bytes) -> tuple[int, int]:
    """Sample rate and duration of an uploaded WAV; HttpError 400 when it is not one."""
    try:
        wav = parse_wav(data, what="the file")
    except WavFormatError as exc:
        raise HttpError(400, str(exc)) from exc
    return wav.rate_hz, wav.samples.shape[0] * 1000 // wav.rate_hz


# ---------------------------------------------------------------- the whole sim


class CascadeSim(StartsAndCloses):
    """Chat completions, transcriptions and the Responses API on one HTTP port,
    and ElevenLabs stream-input on a websocket port, all on 127.0.0.1::

        async with CascadeSim(script, speed=math.inf) as sim:
            client = AsyncOpenAI(base_url=sim.http_url, api_key="x")
            ... sim.elevenlabs_url ...
            await sim.wait_until(lambda: sim.tts.sessions)
    """

    def __init__(
        self,
        script: CascadeScript | Path | None = None,
        *,
        speed: float = 1.0,
        synth: SynthMode = "auto",
        elevenlabs_key: str | None = None,
        chunk_ms: int = 40,
    ) -> None:
        if isinstance(script, Path):
            script = load_cascade_script(script)
        self.script = script or CascadeScript()
        self._changes = Changes()
        self.chat = ChatEndpoints(self.script, speed=speed, on_change=self._changes.set)
        self.brain = ResponsesEndpoint(self.script.brain, speed=speed, on_change=self._changes.set)
        self.tts = ElevenLabsSim(
            speed=speed,
            synth=synth,
            api_key=elevenlabs_key,
            chunk_ms=chunk_ms,
            on_change=self._changes.set,
        )
        self._http = HttpServer(
            {
                ("POST", "/v1/chat/completions"): self.chat.chat_handler,
                ("POST", "/v1/audio/transcriptions"): self.chat.transcriptions_handler,
                ("POST", "/v1/responses"): self.brain.handle,
            }
        )

    async def start(self) -> None:
        await self._http.start()
        await self.tts.start()

    async def close(self) -> None:
        self.release()
        await self.tts.close()
        await self._http.close()

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the base URL for the LLM, ASR and brain clients."""
        return self._http.base_url

    @property
    def elevenlabs_url(self) -> str:
        return self.tts.url

    def settings_for(self, settings: CascadeSettings) -> CascadeSettings:
        """``settings`` pointed at this sim (recogniser, chat model, ElevenLabs)."""
        return dataclasses.replace(
            settings,
            asr_url=self.http_url,
            llm_url=self.http_url,
            elevenlabs_url=self.elevenlabs_url,
        )

    @property
    def violations(self) -> list[str]:
        tts = [f"tts: {p}" for s in self.tts.sessions for p in s.problems]
        return [*self.chat.violations, *tts]

    def release(self) -> None:
        """Let every stalled chat stream go on."""
        self.chat.release.set()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
        """Return once ``predicate()`` holds; TimeoutError after ``timeout_s``."""
        await self._changes.wait_until(predicate, timeout_s)
