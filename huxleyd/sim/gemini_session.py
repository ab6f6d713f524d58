"""The simulator speaking Gemini Live (BidiGenerateContent).

Layer: the sim's protocol behaviour (asyncio; the server hands it ``send``,
``abort`` and ``close_socket``). Like the real server it: wants ``setup``
first (the configuration is fixed after it); sends every message as JSON in
a *binary* frame; reports errors only by closing the socket with a code
(1007 invalid argument, 1008 policy, 1011 internal); takes
``activityStart``/``activityEnd`` only with automatic activity detection
disabled; answers an ended activity, a complete ``clientContent`` or the
last outstanding ``toolResponse`` by itself (there is no response.create);
cuts its reply on a new ``activityStart`` (``interrupted``, and
``toolCallCancellation`` for calls still waiting); hands out session
resumption handles after each turn, resumes a conversation from one; and
sends ``goAway`` when the script says so, closing the socket when the time
left runs out.

Every client message is validated (:mod:`huxleyd.sim.gemini_validate`), and
so is every message it sends.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.exceptions import ConnectionClosed

from huxleyd.errors import ProviderProtocolError
from huxleyd.logs import get_logger
from huxleyd.pcm import BYTES_PER_MS
from huxleyd.sim.gemini_validate import (
    validate_gemini_client_message,
    validate_gemini_server_message,
)
from huxleyd.sim.pacing import AudioPacer, audio_chunks, sleep_script_ms
from huxleyd.sim.record import SimRecord
from huxleyd.sim.scenario import FaultSpec, ResponseSpec
from huxleyd.sim.session import words_for_chunk
from huxleyd.sim.speech import SynthMode, response_speech

OUTPUT_MIME = "audio/pcm;rate=24000"
CLOSE_CODES = {"invalid_argument": 1007, "policy_violation": 1008, "try_again_later": 1013}
"""A scripted error's code → the close code it becomes (anything else: 1011)."""

_log = get_logger("huxleyd.sim")
_ids = itertools.count(1)


def _get(body: dict[str, Any] | None, camel: str) -> Any:
    """A field by its camelCase or snake_case name (proto-JSON allows both)."""
    if not body:
        return None
    if camel in body:
        return body[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return body.get(snake)


class GeminiSimSession:
    """The server side of one Gemini Live connection."""

    def __init__(
        self,
        *,
        record: SimRecord,
        send: Callable[[str | bytes], Awaitable[None]],
        abort: Callable[[], None],
        close_socket: Callable[[int, str], Awaitable[None]],
        model: str,
        speed: float,
        chunk_ms: int,
        synth: SynthMode,
    ) -> None:
        self._record = record
        self._gemini = record.gemini
        self._send = send
        self._abort = abort
        self._close_socket = close_socket
        self._speed = speed
        self._chunk_ms = chunk_ms
        self._synth = synth
        self._setup: dict[str, Any] | None = None
        self._vad_disabled = False
        self._transcribe_in = self._transcribe_out = self._resumable = False
        self._conversation = ""
        self._activity_open = False
        self._input = bytearray()
        self._input_rate = 16_000
        self._task: asyncio.Task[None] | None = None
        self._waiting_calls: dict[str, str] = {}
        self._cancelled_calls: set[str] = set()
        self._timers: set[asyncio.Task[None]] = set()
        self._closing: asyncio.Future[None] | None = None
        self._closed = False
        self._stalled = False
        """A scripted stall: the socket stays open and nothing more is sent."""

    # ------------------------------------------------------------ plumbing

    async def start(self) -> None:
        """Nothing: the client speaks first (``setup``)."""

    def close(self) -> None:
        """The socket is gone: stop streaming and timers."""
        self._closed = True
        for task in [self._task, *self._timers]:
            if task is not None:
                task.cancel()

    async def emit(self, message: dict[str, Any]) -> None:
        """Validate, then send as JSON in a binary frame (as the real server does)."""
        if self._closed or self._stalled:
            return
        validate_gemini_server_message(message)
        await self._send(json.dumps(message, separators=(",", ":")).encode())
        self._record.changed()

    async def fail(self, code: int, reason: str) -> None:
        """An error, Gemini style: close the socket with ``code``."""
        self._record.closes_sent.append((code, reason))
        self._record.changed()
        if not self._closed:
            self._closed = True
            # Its own task: close() cancels the stream and timers, never the close.
            self._closing = asyncio.ensure_future(self._close_socket(code, reason))
            await asyncio.shield(self._closing)

    async def _violation(self, where: str, problem: str, *, close: bool = False) -> None:
        self._record.violation(where, problem)
        if close:
            await self.fail(1007, problem[:120])

    async def _sleep_ms(self, ms: float) -> None:
        await sleep_script_ms(ms, self._speed)

    def _history(self, entry: str) -> None:
        if self._conversation:
            self._gemini.history[self._conversation].append(entry)

    # ------------------------------------------------------------ client messages

    async def handle(self, frame: str | bytes) -> None:
        try:
            key, message = validate_gemini_client_message(frame)
        except ProviderProtocolError as exc:
            await self._violation(_excerpt(frame), str(exc), close=True)
            return
        body: dict[str, Any] = next(iter(message.values()))
        label = key
        if key == "realtimeInput":
            label = f"realtimeInput.{_camel(next(iter(body), '?'))}"
        self._record.received_event(message, message, label)
        if key != "setup" and self._setup is None:
            await self._violation(label, "the first message must be setup", close=True)
            return
        handler = {
            "setup": self._on_setup,
            "realtimeInput": self._on_realtime_input,
            "clientContent": self._on_client_content,
            "toolResponse": self._on_tool_response,
        }[key]
        await handler(body)

    async def _on_setup(self, body: dict[str, Any]) -> None:
        if self._setup is not None:
            await self._violation("setup", "setup was already sent on this connection", close=True)
            return
        self._setup = body
        self._gemini.setups.append(body)
        model = _get(body, "model")
        if not (isinstance(model, str) and model.startswith("models/")):
            await self._violation("setup", f"model must be 'models/…', got {model!r}", close=True)
            return
        detection = _get(_get(body, "realtimeInputConfig"), "automaticActivityDetection")
        self._vad_disabled = bool(_get(detection, "disabled"))
        self._transcribe_in = _get(body, "inputAudioTranscription") is not None
        self._transcribe_out = _get(body, "outputAudioTranscription") is not None
        resumption = _get(body, "sessionResumption")
        self._resumable = resumption is not None
        handle = _get(resumption, "handle")
        if handle and self._gemini.refuse_next_resume:
            self._gemini.refuse_next_resume = False
            self._gemini.resumes_refused += 1
            await self.fail(1007, "Request contains an invalid argument.")
            return
        if handle:
            conversation = self._gemini.handles_sent.get(handle)
            if conversation is None:
                await self.fail(1008, "unknown session resumption handle")
                self._record.violation("setup", f"unknown resumption handle {handle!r}")
                return
            self._gemini.resumed_handles.append(handle)
            self._conversation = conversation
        else:
            self._conversation = f"conv{next(_ids)}"
            self._gemini.history[self._conversation] = []
        await self.emit({"setupComplete": {}})

    async def _on_realtime_input(self, body: dict[str, Any]) -> None:
        if _get(body, "activityStart") is not None:
            await self._activity_start()
        elif _get(body, "activityEnd") is not None:
            await self._activity_end()
        elif _get(body, "audio") is not None:
            await self._audio(_get(body, "audio"))
        elif _get(body, "text") is not None:
            await self._violation("realtimeInput.text", "text goes in clientContent for PTT")

    async def _activity_start(self) -> None:
        if not self._vad_disabled:
            message = "activityStart needs realtimeInputConfig.automaticActivityDetection.disabled"
            await self._violation("realtimeInput.activityStart", message, close=True)
            return
        if self._activity_open:
            await self._violation("realtimeInput.activityStart", "an activity is already open")
        await self._interrupt()
        self._activity_open = True
        self._input.clear()

    async def _audio(self, blob: dict[str, Any]) -> None:
        mime = str(_get(blob, "mimeType") or "")
        if not mime.startswith("audio/pcm"):
            await self._violation("realtimeInput.audio", f"mimeType {mime!r} is not audio/pcm")
            return
        self._input_rate = int(mime.partition("rate=")[2] or 16_000)
        if self._vad_disabled and not self._activity_open:
            await self._violation(
                "realtimeInput.audio", "audio outside activityStart/activityEnd is ignored"
            )
            return
        try:
            self._input += base64.b64decode(str(_get(blob, "data")), validate=True)
        except binascii.Error as exc:
            await self._violation("realtimeInput.audio", f"data is not base64: {exc}")

    async def _activity_end(self) -> None:
        if not self._activity_open:
            await self._violation("realtimeInput.activityEnd", "no activity is open")
            return
        self._activity_open = False
        self._record.committed_audio.append(bytes(self._input))
        self._record.committed_ms.append(len(self._input) * 1000.0 / (2 * self._input_rate))
        self._history("user:audio")
        hear = self._record.script.begin_turn()
        if self._transcribe_in:
            await self.emit(
                {"serverContent": {"inputTranscription": {"text": hear, "finished": True}}}
            )
        self._respond(self._record.script.next_response())

    async def _on_client_content(self, body: dict[str, Any]) -> None:
        texts: list[str] = []
        for turn in _get(body, "turns") or []:
            if turn.get("role") == "model":
                self._gemini.history_replays += 1
            parts = turn.get("parts") or []
            texts += [p["text"] for p in parts if isinstance(p, dict) and "text" in p]
        if texts:
            self._record.user_texts.append(" ".join(texts))
            self._history("user:text")
        if not _get(body, "turnComplete"):
            return
        await self._interrupt()
        if texts:
            self._record.script.begin_turn(typed=" ".join(texts))
        self._respond(self._record.script.next_response())

    async def _on_tool_response(self, body: dict[str, Any]) -> None:
        answered = False
        for response in _get(body, "functionResponses") or []:
            call_id = response.get("id")
            if call_id in self._cancelled_calls:
                continue  # it crossed our toolCallCancellation: harmless
            if call_id not in self._waiting_calls:
                self._record.violation("toolResponse", f"no call {call_id!r} is waiting")
                continue
            del self._waiting_calls[call_id]
            answered = True
            self._record.tool_outputs[call_id] = json.dumps(response.get("response"))
            self._history("tool:output")
        if answered and not self._waiting_calls:
            self._respond(self._record.script.next_response())

    # ------------------------------------------------------------ the model's turns

    def _respond(self, spec: ResponseSpec) -> None:
        self._task = asyncio.create_task(self._stream(spec))

    async def _interrupt(self) -> None:
        """The user took the floor: cut the reply and any call still waiting."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await self.emit({"serverContent": {"interrupted": True}})
            self._record.responses_done += 1
        if self._waiting_calls:
            ids = list(self._waiting_calls)
            self._cancelled_calls.update(ids)
            self._waiting_calls.clear()
            await self.emit({"toolCallCancellation": {"ids": ids}})

    async def _stream(self, spec: ResponseSpec) -> None:
        try:
            await self._stream_steps(spec)
        except ConnectionClosed:
            pass
        except Exception as exc:  # a sim bug: make it visible to the tests
            self._record.sim_error(f"{type(exc).__name__}: {exc}")
            _log.exception("sim_response_failed", dialect="gemini")

    async def _stream_steps(self, spec: ResponseSpec) -> None:
        if spec.error is not None:
            await self.fail(CLOSE_CODES.get(spec.error.code, 1011), spec.error.message)
            return
        if spec.delay_ms:
            await self._sleep_ms(spec.delay_ms)
        if spec.fault is not None and spec.fault.after_deltas == 0 and await self.fault(spec.fault):
            return
        if spec.speaks and not await self._speak(spec):
            return
        if spec.status == "failed":
            await self.fail(1011, "Internal error encountered.")
            return
        if spec.tool_calls:
            await self._call(spec)
            self._record.responses_done += 1
            if spec.fault is not None and spec.fault.after_deltas is None:
                await self.fault(spec.fault)
            return  # the model waits for the toolResponse
        await self.emit({"serverContent": {"generationComplete": True}})
        # As the real server ends a turn: the interaction status beside
        # turnComplete, and the usage in the same message.
        await self.emit(
            {
                "serverContent": {"turnComplete": True, "interactionStatus": "IDLE"},
                "usageMetadata": {"promptTokenCount": 0, "totalTokenCount": 0},
            }
        )
        self._record.responses_done += 1
        await self._after_turn(spec)
        if spec.fault is not None and spec.fault.after_deltas is None:
            await self.fault(spec.fault)

    async def fault(self, fault: FaultSpec) -> bool:
        """Inject a scripted fault; True when the response stops there."""
        self._record.faults.append(fault.kind)
        _log.info("sim_fault", dialect="gemini", kind=fault.kind, code=fault.code)
        if fault.kind == "drop":
            self._abort()
        elif fault.kind == "close":
            await self.fail(fault.code, "going away")
        elif fault.kind == "stall":
            self._stalled = True
        elif fault.kind == "go_away":
            await self._go_away(fault.time_left_s)
            return False
        elif fault.kind == "refuse_resume":
            self._gemini.refuse_next_resume = True
            await self.fail(fault.code, "Deadline expired before operation could complete.")
        else:  # session_expired: OpenAI's and xAI's, a no-op here
            return False
        return True

    async def _speak(self, spec: ResponseSpec) -> bool:
        pcm = await response_speech(spec, self._synth)
        chunks = audio_chunks(pcm, self._chunk_ms)
        words = spec.say.split()
        pacer = AudioPacer(self._speed)  # ahead of real time, as Gemini sends
        for index, piece in enumerate(chunks):
            data = base64.b64encode(piece).decode("ascii")
            part = {"inlineData": {"mimeType": OUTPUT_MIME, "data": data}}
            await self.emit({"serverContent": {"modelTurn": {"role": "model", "parts": [part]}}})
            said = "".join(words_for_chunk(words, index, len(chunks)))
            if said and self._transcribe_out:
                await self.emit({"serverContent": {"outputTranscription": {"text": said}}})
            if spec.drop_after_deltas is not None and index + 1 >= spec.drop_after_deltas:
                _log.info("sim_dropping_connection", dialect="gemini", chunks=index + 1)
                self._abort()
                return False
            if spec.go_away_after_deltas == index + 1:
                await self._go_away(spec.go_away_s or 60.0)
            fault = spec.fault
            if fault is not None and fault.after_deltas == index + 1 and await self.fault(fault):
                return False
            await pacer.sent(len(piece) / BYTES_PER_MS)
        self._history("model:speech")
        return True

    async def _call(self, spec: ResponseSpec) -> None:
        calls = []
        for call in spec.tool_calls:
            call_id = f"call_sim{next(_ids):05d}"
            try:
                args = json.loads(call.arguments_text())
            except ValueError:
                args = None
            if not isinstance(args, dict):  # Gemini args are always an object
                args = {"raw": call.arguments_text()}
            calls.append({"id": call_id, "name": call.name, "args": args})
            self._waiting_calls[call_id] = call.name
            self._record.tool_calls.append((call_id, call.name, call.arguments_text()))
            self._history("model:call")
        await self.emit({"toolCall": {"functionCalls": calls}})

    async def _after_turn(self, spec: ResponseSpec) -> None:
        if self._resumable:
            handle = f"{self._conversation}-h{next(_ids)}"
            self._gemini.handles_sent[handle] = self._conversation
            update = {"newHandle": handle, "resumable": True}
            await self.emit({"sessionResumptionUpdate": update})
        if spec.go_away_s is not None and spec.go_away_after_deltas is None:
            await self._go_away(spec.go_away_s)
        if spec.close_after is not None:
            await self.fail(spec.close_after, "going away")

    async def _go_away(self, time_left_s: float) -> None:
        """``goAway``, then the close once the time left has run out."""
        self._gemini.go_aways_sent += 1
        await self.emit({"goAway": {"timeLeft": f"{time_left_s:g}s"}})
        timer = asyncio.create_task(self._expire(time_left_s))
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)

    async def _expire(self, time_left_s: float) -> None:
        await self._sleep_ms(time_left_s * 1000.0)
        if not self._closed:
            self._gemini.go_away_expired += 1
            await self.fail(1000, "session time is up")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _excerpt(frame: str | bytes) -> str:
    text = frame if isinstance(frame, str) else frame[:200].decode("utf-8", "replace")
    return text[:200]
