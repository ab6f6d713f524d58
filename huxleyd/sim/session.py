"""One simulator connection: validate client events, answer from the script.

Layer: the sim's protocol behaviour (asyncio, but no sockets of its own: it
gets a ``send`` coroutine and an ``abort`` callback from the server).

It behaves like the GA server in push-to-talk use: ``session.update`` →
``session.updated``; ``commit`` of <100 ms → ``input_audio_buffer_commit_empty``;
one in-conversation response at a time (else
``conversation_already_has_active_response``); ``response.cancel`` →
``response.done`` cancelled/``client_cancelled`` or
``response_cancel_not_active``; ``conversation.item.truncate`` →
``conversation.item.truncated`` (an ``audio_end_ms`` past the audio sent is an
error, as on the real server). Server VAD is not simulated: turns end with
an explicit commit, whatever the session says.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed

from huxleyd.errors import ProviderProtocolError
from huxleyd.logs import get_logger
from huxleyd.pcm import BYTES_PER_MS
from huxleyd.sim import wire
from huxleyd.sim.pacing import AudioPacer, audio_chunks, sleep_script_ms
from huxleyd.sim.record import SimRecord, Truncation
from huxleyd.sim.scenario import FaultSpec, ResponseSpec, ToolCallSpec
from huxleyd.sim.speech import SynthMode, response_speech
from huxleyd.sim.validate import validate_client_event

MIN_COMMIT_MS = 100
"""The real server refuses to commit less than 100 ms of audio."""

_log = get_logger("huxleyd.sim")
_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_sim{next(_ids):05d}"


@dataclass(slots=True)
class _Running:
    """A response being streamed."""

    response_id: str
    out_of_band: bool
    metadata: dict[str, str] | None
    output: list[dict[str, Any]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


@dataclass(slots=True)
class _Item:
    role: str
    audio_ms: float = 0.0


class SimSession:
    """The server side of one websocket connection."""

    def __init__(
        self,
        *,
        record: SimRecord,
        send: Callable[[str], Awaitable[None]],
        abort: Callable[[], None],
        close_socket: Callable[[int, str], Awaitable[None]] | None = None,
        model: str,
        speed: float,
        chunk_ms: int,
        synth: SynthMode,
    ) -> None:
        self._record = record
        self._send_text = send
        self._abort = abort
        self._close_socket = close_socket
        self._closing: asyncio.Future[None] | None = None
        self._speed = speed
        self._chunk_ms = chunk_ms
        self._synth = synth
        self._outbox = wire.Outbox()
        self._session = wire.default_session(model)
        self._input = bytearray()
        self._items: dict[str, _Item] = {}
        self._last_item: str | None = None
        self._running: dict[str, _Running] = {}
        self._unanswered_calls: set[str] = set()
        self._closed = False
        self._stalled = False
        """A scripted stall: the socket stays open and nothing more is sent."""

    # ------------------------------------------------------------ plumbing

    async def emit(self, event: dict[str, Any]) -> None:
        if not self._closed and not self._stalled:
            if event["type"] == "error":
                self._record.errors_sent.append(event["error"]["code"])
            await self._send_text(self._outbox.encode(event))
            self._record.changed()

    async def start(self) -> None:
        await self.emit({"type": "session.created", "session": self._session})

    def close(self) -> None:
        """The socket is gone: stop streaming."""
        self._closed = True
        for running in list(self._running.values()):
            if running.task is not None:
                running.task.cancel()

    async def _sleep_ms(self, ms: float) -> None:
        await sleep_script_ms(ms, self._speed)

    def _add_item(self, item_id: str, role: str, audio_ms: float = 0.0) -> str | None:
        previous, self._last_item = self._last_item, item_id
        self._items[item_id] = _Item(role, audio_ms)
        return previous

    # ------------------------------------------------------------ client events

    async def handle(self, frame: str | bytes) -> None:
        """One client frame: validate strictly, record, act."""
        if isinstance(frame, bytes):
            self._record.violation("(binary)", "binary frame; the GA protocol is JSON text")
            await self.emit(wire.error("invalid_request_error", "binary frames are not accepted"))
            return
        try:
            event, raw = self._validate(frame)
        except ProviderProtocolError as exc:
            self._record.violation(frame[:200], str(exc))
            await self.emit(wire.error("invalid_event", str(exc)))
            return
        self._record.received_event(event, raw, raw["type"])
        handler = getattr(self, "_on_" + raw["type"].replace(".", "_"), None)
        if handler is not None:
            await handler(raw)

    def _validate(self, frame: str) -> tuple[Any, dict[str, Any]]:
        """(typed event, dict of the keys sent); ProviderProtocolError when invalid."""
        event = validate_client_event(frame)
        return event, event.model_dump(mode="json", exclude_unset=True)

    def _voice(self) -> str:
        return str(self._session["audio"]["output"].get("voice") or "marin")

    async def _on_session_update(self, raw: dict[str, Any]) -> None:
        update = raw["session"]
        if update.get("type") != "realtime":
            message = "the simulator speaks realtime sessions only, not transcription"
            self._record.violation("session.update", message)
            await self.emit(wire.error("invalid_value", message, event_id=raw.get("event_id")))
            return
        self._session = wire.merge(self._session, update)
        await self.emit({"type": "session.updated", "session": self._session})

    async def _on_input_audio_buffer_append(self, raw: dict[str, Any]) -> None:
        try:
            self._input += base64.b64decode(raw["audio"], validate=True)
        except binascii.Error as exc:
            self._record.violation("input_audio_buffer.append", f"audio is not base64: {exc}")
            await self.emit(wire.error("invalid_value", "audio is not valid base64"))

    async def _on_input_audio_buffer_clear(self, raw: dict[str, Any]) -> None:
        self._input.clear()
        await self.emit({"type": "input_audio_buffer.cleared"})

    async def _on_input_audio_buffer_commit(self, raw: dict[str, Any]) -> None:
        buffered_ms = len(self._input) / BYTES_PER_MS
        if buffered_ms < MIN_COMMIT_MS:
            await self.emit(
                wire.error(
                    "input_audio_buffer_commit_empty",
                    "Error committing input audio buffer: buffer too small. Expected at least "
                    f"{MIN_COMMIT_MS}ms of audio, but buffer only has {buffered_ms:.2f}ms of audio.",
                    event_id=raw.get("event_id"),
                )
            )
            return
        self._record.committed_audio.append(bytes(self._input))
        self._record.committed_ms.append(buffered_ms)
        self._input.clear()
        item_id = _new_id("item")
        previous = self._add_item(item_id, "user")
        hear = self._record.script.begin_turn()
        await self.emit(
            {
                "type": "input_audio_buffer.committed",
                "item_id": item_id,
                "previous_item_id": previous,
            }
        )
        item = wire.user_audio_item(item_id)
        await self.emit(wire.conversation_item_event("added", item, previous))
        await self.emit(wire.conversation_item_event("done", item, previous))
        if self._session["audio"]["input"].get("transcription"):
            await self.emit(wire.transcription_completed(item_id, hear, buffered_ms / 1000.0))

    async def _on_conversation_item_create(self, raw: dict[str, Any]) -> None:
        item = raw["item"]
        item_id = item.get("id") or _new_id("item")
        if item["type"] == "function_call_output":
            self._unanswered_calls.discard(item["call_id"])
            self._record.tool_outputs[item["call_id"]] = item["output"]
        elif item["type"] == "message" and item["role"] == "user":
            texts = [c.get("text", "") for c in item["content"] if c.get("type") == "input_text"]
            self._record.user_texts.append(" ".join(texts))
            self._record.script.begin_turn(typed=" ".join(texts))
        previous = self._add_item(item_id, item.get("role", item["type"]))
        echoed = wire.with_id(item, item_id)
        await self.emit(wire.conversation_item_event("added", echoed, previous))
        await self.emit(wire.conversation_item_event("done", echoed, previous))

    async def _on_conversation_item_delete(self, raw: dict[str, Any]) -> None:
        item_id = raw["item_id"]
        if self._items.pop(item_id, None) is None:
            await self._no_such_item(item_id, raw)
            return
        await self.emit({"type": "conversation.item.deleted", "item_id": item_id})

    async def _on_conversation_item_retrieve(self, raw: dict[str, Any]) -> None:
        await self._no_such_item(raw["item_id"], raw, "the simulator does not keep item contents")

    async def _no_such_item(self, item_id: str, raw: dict[str, Any], why: str = "") -> None:
        message = why or f"Item with id '{item_id}' not found."
        await self.emit(wire.error("item_not_found", message, event_id=raw.get("event_id")))

    async def _on_conversation_item_truncate(self, raw: dict[str, Any]) -> None:
        item_id, end_ms = raw["item_id"], raw["audio_end_ms"]
        item = self._items.get(item_id)
        if item is None or item.role != "assistant":
            await self._no_such_item(item_id, raw)
            return
        self._record.truncations.append(Truncation(item_id, end_ms, item.audio_ms))
        if end_ms > item.audio_ms + 1:
            await self.emit(
                wire.error(
                    "invalid_value",
                    f"audio_end_ms {end_ms} is past the {item.audio_ms:.0f} ms of audio sent",
                    event_id=raw.get("event_id"),
                )
            )
            return
        item.audio_ms = float(end_ms)
        await self.emit(
            {
                "type": "conversation.item.truncated",
                "item_id": item_id,
                "content_index": raw["content_index"],
                "audio_end_ms": end_ms,
            }
        )

    async def _on_output_audio_buffer_clear(self, raw: dict[str, Any]) -> None:
        message = "output_audio_buffer.clear is WebRTC/SIP only; over WebSocket cancel and truncate"
        self._record.violation("output_audio_buffer.clear", message)
        await self.emit(wire.error("invalid_request_error", message, event_id=raw.get("event_id")))

    # ------------------------------------------------------------ responses

    async def _on_response_create(self, raw: dict[str, Any]) -> None:
        params = raw.get("response") or {}
        out_of_band = params.get("conversation") == "none"
        in_band = [r for r in self._running.values() if not r.out_of_band]
        if not out_of_band and in_band:
            active = in_band[0].response_id
            await self.emit(
                wire.error(
                    "conversation_already_has_active_response",
                    f"Conversation already has an active response in progress: {active}. "
                    "Wait until the response is finished before creating a new one.",
                    event_id=raw.get("event_id"),
                )
            )
            return
        if not out_of_band and self._unanswered_calls:
            self._record.violation(
                "response.create",
                "function calls without function_call_output: "
                + ", ".join(sorted(self._unanswered_calls)),
            )
        spec = (
            self._out_of_band_spec(params) if out_of_band else self._record.script.next_response()
        )
        if spec.error is not None:
            await self.emit(
                wire.error(
                    spec.error.code,
                    spec.error.message,
                    kind=spec.error.type,
                    event_id=raw.get("event_id"),
                )
            )
            return
        running = _Running(_new_id("resp"), out_of_band, params.get("metadata"))
        self._running[running.response_id] = running
        running.task = asyncio.create_task(self._stream(running, spec))

    def _out_of_band_spec(self, params: dict[str, Any]) -> ResponseSpec:
        """An out-of-band response reads its input text (a verbatim reader), if any."""
        texts = [
            part.get("text", "")
            for item in params.get("input") or []
            if isinstance(item, dict) and item.get("type") == "message"
            for part in item.get("content") or []
            if isinstance(part, dict) and part.get("type") == "input_text"
        ]
        text = " ".join(t for t in texts if t)
        if not text:
            return self._record.script.default_response
        self._record.read_aloud.append(text)
        return ResponseSpec(say=text)

    async def _on_response_cancel(self, raw: dict[str, Any]) -> None:
        wanted = raw.get("response_id")
        targets = [
            r
            for r in self._running.values()
            if (r.response_id == wanted if wanted else not r.out_of_band)
        ]
        if not targets:
            await self.emit(
                wire.error(
                    "response_cancel_not_active",
                    "Cancellation failed: no active response found.",
                    event_id=raw.get("event_id"),
                )
            )
            return
        for running in targets:
            if running.task is not None:
                running.task.cancel()
                await asyncio.gather(running.task, return_exceptions=True)
            await self._end(running, "cancelled", reason="client_cancelled")

    async def _stream(self, running: _Running, spec: ResponseSpec) -> None:
        try:
            await self._stream_steps(running, spec)
        except ConnectionClosed:
            pass  # the client went away mid-response; the server handler cleans up
        except Exception as exc:  # a sim bug: make it visible to the tests
            self._record.sim_error(f"{type(exc).__name__}: {exc}")
            _log.exception("sim_response_failed", response=running.response_id)

    async def _stream_steps(self, running: _Running, spec: ResponseSpec) -> None:
        await self.emit(self._response_event("response.created", running, "in_progress"))
        if spec.delay_ms:
            await self._sleep_ms(spec.delay_ms)
        if spec.fault is not None and spec.fault.after_deltas == 0 and await self.fault(spec.fault):
            return
        if spec.speaks and not await self._speak(running, spec):
            return  # the connection was dropped on purpose
        for call in spec.tool_calls:
            await self._call(running, call)
        await self._end(running, spec.status)
        if spec.close_after is not None:
            await self._close_now(spec.close_after)
        if spec.fault is not None and spec.fault.after_deltas is None:
            await self.fault(spec.fault)

    async def fault(self, fault: FaultSpec) -> bool:
        """Inject a scripted fault; True when the response stops there."""
        self._record.faults.append(fault.kind)
        _log.info("sim_fault", kind=fault.kind, code=fault.code)
        if fault.kind == "drop":
            self._abort()
        elif fault.kind == "close":
            await self._close_now(fault.code)
        elif fault.kind == "stall":
            self._stalled = True
        elif fault.kind == "session_expired":
            await self.emit(
                wire.error(
                    "session_expired",
                    "Your session hit the maximum duration of 60 minutes.",
                )
            )
            await self._close_now(1001)
        else:  # go_away, refuse_resume: Gemini's, a no-op in this dialect
            return False
        return True

    async def _close_now(self, code: int) -> None:
        """End the connection with ``code`` (a cap, a restart), in its own task:
        the close cancels the streams, never itself."""
        if self._close_socket is None or self._closed:
            return
        _log.info("sim_closing_connection", code=code)
        self._record.closes_sent.append((code, "going away"))
        self._closing = asyncio.ensure_future(self._close_socket(code, "going away"))
        await asyncio.shield(self._closing)

    def _response_event(
        self, event_type: str, running: _Running, status: str, reason: str | None = None
    ) -> dict[str, Any]:
        body = wire.response(
            running.response_id,
            status=status,
            output=running.output if status != "in_progress" else [],
            out_of_band=running.out_of_band,
            voice=self._voice(),
            metadata=running.metadata,
            reason=reason,
        )
        return {"type": event_type, "response": body}

    async def _end(self, running: _Running, status: str, reason: str | None = None) -> None:
        if self._running.pop(running.response_id, None) is None:
            return
        await self.emit(self._response_event("response.done", running, status, reason))
        self._record.responses_done += 1

    async def _speak(self, running: _Running, spec: ResponseSpec) -> bool:
        """The assistant message of a response; False if the script dropped the connection."""
        pcm = await response_speech(spec, self._synth)
        rid, item_id = running.response_id, _new_id("item")
        previous = self._add_item(item_id, "assistant")
        running.output.append(wire.assistant_item(item_id, "incomplete", None))
        started = wire.assistant_item(item_id, "in_progress", None)
        await self.emit(wire.output_item_event("added", rid, len(running.output) - 1, started))
        await self.emit(wire.conversation_item_event("added", started, previous))
        await self.emit(wire.part_event("added", rid, item_id, {"type": "audio", "transcript": ""}))
        if not await self._stream_audio(rid, item_id, pcm, spec):
            return False
        await self.emit(wire.content_event("response.output_audio.done", rid, item_id))
        await self.emit(
            wire.content_event(
                "response.output_audio_transcript.done", rid, item_id, transcript=spec.say
            )
        )
        part = {"type": "audio", "transcript": spec.say}
        await self.emit(wire.part_event("done", rid, item_id, part))
        finished = wire.assistant_item(item_id, "completed", spec.say)
        running.output[-1] = finished
        await self.emit(wire.output_item_event("done", rid, len(running.output) - 1, finished))
        await self.emit(wire.conversation_item_event("done", finished, previous))
        return True

    async def _stream_audio(self, rid: str, item_id: str, pcm: bytes, spec: ResponseSpec) -> bool:
        """Paced audio deltas with the transcript's words spread over them.

        Returns False when ``drop_after_deltas`` cut the connection.
        """
        chunks = audio_chunks(pcm, self._chunk_ms)
        words = spec.say.split()
        item = self._items[item_id]
        pacer = AudioPacer(self._speed)  # ahead of real time, as the real service sends
        for index, piece in enumerate(chunks):
            delta = base64.b64encode(piece).decode("ascii")
            await self.emit(
                wire.content_event("response.output_audio.delta", rid, item_id, delta=delta)
            )
            item.audio_ms += len(piece) / BYTES_PER_MS
            for word in words_for_chunk(words, index, len(chunks)):
                await self.emit(
                    wire.content_event(
                        "response.output_audio_transcript.delta",
                        rid,
                        item_id,
                        delta=word,
                        obfuscation=wire.obfuscation(word),
                    )
                )
            if spec.drop_after_deltas is not None and index + 1 >= spec.drop_after_deltas:
                _log.info("sim_dropping_connection", response=rid, deltas=index + 1)
                self._abort()
                return False
            fault = spec.fault
            if fault is not None and fault.after_deltas == index + 1 and await self.fault(fault):
                return False
            await pacer.sent(len(piece) / BYTES_PER_MS)
        return True

    async def _call(self, running: _Running, call: ToolCallSpec) -> None:
        rid, item_id, call_id = running.response_id, _new_id("item"), _new_id("call")
        arguments = call.arguments_text()
        previous = self._add_item(item_id, "function_call")
        index = len(running.output)
        started = wire.function_call_item(item_id, call_id, call.name, "", "in_progress")
        running.output.append(started)
        await self.emit(wire.output_item_event("added", rid, index, started))
        await self.emit(wire.conversation_item_event("added", started, previous))
        common = {"response_id": rid, "item_id": item_id, "output_index": index, "call_id": call_id}
        await self.emit(
            {
                "type": "response.function_call_arguments.delta",
                **common,
                "delta": arguments,
                "obfuscation": wire.obfuscation(arguments),
            }
        )
        await self.emit(
            {
                "type": "response.function_call_arguments.done",
                **common,
                "name": call.name,
                "arguments": arguments,
            }
        )
        finished = wire.function_call_item(item_id, call_id, call.name, arguments, "completed")
        running.output[index] = finished
        self._unanswered_calls.add(call_id)
        self._record.tool_calls.append((call_id, call.name, arguments))
        await self.emit(wire.output_item_event("done", rid, index, finished))
        await self.emit(wire.conversation_item_event("done", finished, previous))


def words_for_chunk(words: list[str], index: int, chunks: int) -> list[str]:
    """Spread the transcript's words evenly over the audio chunks (with their spaces)."""
    if not words or chunks == 0:
        return []
    start = index * len(words) // chunks
    end = (index + 1) * len(words) // chunks
    return [w if i == 0 else " " + w for i, w in enumerate(words) if start <= i < end]
