"""The sans-I/O OpenAI Realtime (GA) core.

Layer: pure protocol logic. No asyncio, no sockets: the transport feeds
received frames to :meth:`OpenAIRealtimeProtocol.receive` and sends what
:meth:`~OpenAIRealtimeProtocol.messages_to_send` hands out. The coordinator
gives commands (:class:`~huxleyd.providers.base.ProviderCommands`) and reads
provider-neutral events.

What it tracks, per connection: the in-conversation response that is active
(requested → ``response.created`` → ``response.done``), out-of-band responses,
the assistant items and function calls of each response, the calls still
waiting for an output, and which responses/items were cancelled or truncated
(their late audio is dropped here, counted in ``dropped_audio_chunks``).
Instructions, tools and voice are re-sent only when their hash changed, and
in full after every (re)connect.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from huxley_sdk.logging import EventLogger, get_logger
from huxleyd.providers import openai_wire as wire
from huxleyd.providers.base import Capabilities, InterruptAcceptance
from huxleyd.providers.core import SansIOCore, check_audio_end_ms, check_pcm16
from huxleyd.providers.events import (
    AudioChunk,
    InputCommitted,
    Interrupted,
    ItemTruncated,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    Role,
    SessionReady,
    ToolCall,
    TranscriptDelta,
    TranscriptDone,
)

OPENAI_CAPABILITIES = Capabilities(
    text_input=True,
    mid_session_instructions=True,
    mid_session_tools=True,
    response_cancel=True,
    truncate=True,
    interrupt_acceptance=InterruptAcceptance.IMMEDIATE_PROVIDER_ACK,
    input_rate_hz=wire.RATE_HZ,
    output_rate_hz=wire.RATE_HZ,
    verbatim_reader=True,
)

READER_INSTRUCTIONS = (
    "Read the user's text aloud exactly as written, word for word. Do not add, "
    "drop, explain or comment on anything."
)

SESSION_ENDING_CODES = frozenset({"session_expired", "invalid_api_key", "insufficient_quota"})
"""Error codes after which the session is useless. Every other error leaves the
socket open and the session usable (reference §1.7), so it is recoverable —
among them ``conversation_already_has_active_response``,
``input_audio_buffer_commit_empty`` and ``response_cancel_not_active``."""

_STATUS = {
    "completed": ResponseStatus.COMPLETED,
    "cancelled": ResponseStatus.CANCELLED,
    "failed": ResponseStatus.FAILED,
    "incomplete": ResponseStatus.INCOMPLETE,
}


@dataclass(slots=True)
class _Response:
    """What we know about one response while it runs."""

    response_id: str
    out_of_band: bool
    had_audio: bool = False
    calls: list[ToolCall] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Config:
    instructions: str
    tools: list[dict[str, Any]]
    voice: str


class OpenAIRealtimeProtocol(SansIOCore):
    """OpenAI Realtime GA, push-to-talk (turn detection off), PCM16 24 kHz.

    ``transcription_model`` (e.g. ``"gpt-4o-mini-transcribe"``) turns on
    transcripts of the user's speech; None leaves them off.
    """

    capabilities = OPENAI_CAPABILITIES

    def __init__(
        self, *, transcription_model: str | None = None, logger: EventLogger | None = None
    ) -> None:
        super().__init__(logger=logger or get_logger("huxleyd.providers.openai"))
        self._transcription_model = transcription_model
        self._config: _Config | None = None
        self._seq = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "session.created": self._on_session_created,
            "session.updated": self._on_session_updated,
            "input_audio_buffer.committed": self._on_committed,
            "input_audio_buffer.speech_started": self._on_speech_started,
            "conversation.item.done": self._on_item_done,
            "conversation.item.truncated": self._on_truncated,
            "conversation.item.input_audio_transcription.delta": self._on_user_delta,
            "conversation.item.input_audio_transcription.completed": self._on_user_done,
            "conversation.item.input_audio_transcription.failed": self._on_user_failed,
            "response.created": self._on_response_created,
            "response.output_audio.delta": self._on_audio_delta,
            "response.output_audio_transcript.delta": self._on_assistant_delta,
            "response.output_audio_transcript.done": self._on_assistant_done,
            "response.output_text.delta": self._on_assistant_delta,
            "response.output_text.done": self._on_assistant_done,
            "response.function_call_arguments.done": self._on_call_done,
            "response.output_item.done": self._on_output_item_done,
            "response.done": self._on_response_done,
            "error": self._on_error,
        }
        # Per-connection state; _reset_connection() empties it on every connect.
        self._sent: dict[str, str] = {}
        """Digest of each configuration part as last sent on this connection."""
        self._awaiting_ready = False
        self._ready = False
        self._pending_creates: deque[tuple[str, bool]] = deque()
        """(event_id, out_of_band) of response.create frames not yet answered."""
        self._cancel_next_created = False
        self._active_id: str | None = None
        self._responses: dict[str, _Response] = {}
        self._reported_calls: set[str] = set()
        self._unanswered: dict[str, str] = {}
        self._cancelled: set[str] = set()
        self._truncated: set[str] = set()

    # ------------------------------------------------------------ connection

    def connection_url(self, base_url: str, model: str) -> str:
        """``wss://…/v1/realtime?model=…``."""
        separator = "&" if "?" in base_url else "?"
        return base_url + separator + urlencode({"model": model})

    def connection_headers(self, api_key: str | None) -> dict[str, str]:
        """Bearer auth; GA sends no ``OpenAI-Beta`` header."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def connection_opened(self) -> None:
        """Forget the old connection; queue the full configuration if there is one."""
        self._reset_connection()
        if self._config is not None:
            self._send_session_update(full=True)

    def connection_lost(self) -> None:
        """End every started response as FAILED (``connection_lost``)."""
        for response in list(self._responses.values()):
            self._finish(response, ResponseStatus.FAILED, "connection_lost")
        self._pending_creates.clear()
        self._active_id = None

    def _reset_connection(self) -> None:
        self._out.clear()
        self._sent.clear()
        self._awaiting_ready = False
        self._ready = False
        self._pending_creates.clear()
        self._cancel_next_created = False
        self._active_id = None
        self._responses.clear()
        self._reported_calls.clear()
        self._unanswered.clear()
        self._cancelled.clear()
        self._truncated.clear()

    # ------------------------------------------------------------ state

    @property
    def response_active(self) -> bool:
        return self._active_id is not None or any(not oob for _, oob in self._pending_creates)

    @property
    def active_response_id(self) -> str | None:
        return self._active_id

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return frozenset(self._unanswered)

    @property
    def session_ready(self) -> bool:
        """SessionReady was reported on this connection."""
        return self._ready

    # ------------------------------------------------------------ sans-I/O

    def _receive_frame(self, frame: str | bytes) -> None:
        """One JSON event, dispatched on its ``type`` (``receive`` reports what fails here)."""
        self._frame_type = "?"
        event = wire.parse_frame(frame)
        self._frame_type = event_type = event["type"]
        handler = self._handlers.get(event_type)
        if handler is not None:
            handler(event)
        elif event_type not in wire.IGNORED_EVENTS:
            self._once(
                f"unknown:{event_type}",
                "provider_event_unknown",
                note="skipped; logged once",
                type=event_type,
            )

    # ------------------------------------------------------------ commands

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        self._config = _Config(instructions, wire.function_tools(tools), voice)
        self._send_session_update(full=not self._sent)

    def start_turn(self) -> None:
        self._send({"type": "input_audio_buffer.clear"})

    def append_audio(self, pcm: bytes) -> None:
        check_pcm16(pcm)
        if pcm:
            self._out.append(wire.append_frame(pcm))

    def end_turn(self) -> None:
        self._send({"type": "input_audio_buffer.commit"})

    def send_user_text(self, text: str) -> None:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        self._send({"type": "conversation.item.create", "item": item})

    def send_tool_output(self, call_id: str, output: str) -> None:
        self._unanswered.pop(call_id, None)
        item = {"type": "function_call_output", "call_id": call_id, "output": output}
        self._send({"type": "conversation.item.create", "item": item})

    def request_response(
        self,
        *,
        instructions: str | None = None,
        out_of_band: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        event: dict[str, Any] = {"type": "response.create"}
        params: dict[str, Any] = {}
        if instructions is not None:
            params["instructions"] = instructions
        if out_of_band:
            params["conversation"] = "none"
        if metadata:
            params["metadata"] = dict(metadata)
        if params:
            event["response"] = params
        event_id = self._send(event)
        self._pending_creates.append((event_id, out_of_band))

    def read_aloud(self, text: str, *, instructions: str) -> None:
        """SpeakVerbatim: an out-of-band response (``conversation: "none"``), tools
        off, whose only input is ``text``; the persona's instructions keep the voice."""
        params: dict[str, Any] = {
            "conversation": "none",
            "instructions": f"{instructions}\n\n{READER_INSTRUCTIONS}".strip(),
            "tool_choice": "none",
            "output_modalities": ["audio"],
            "metadata": {"purpose": "verbatim_reader"},
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                }
            ],
        }
        event_id = self._send({"type": "response.create", "response": params})
        self._pending_creates.append((event_id, True))

    def cancel_response(self) -> bool:
        """Cancel every running response; True when a ``response.cancel`` was sent."""
        sent = False
        for response_id in list(self._responses):
            if response_id not in self._cancelled:
                self._cancelled.add(response_id)
                self._send({"type": "response.cancel", "response_id": response_id})
                sent = True
        requested = any(not oob for _, oob in self._pending_creates)
        if not sent and requested and not self._cancel_next_created:
            # Requested but not started: the server handles our frames in order,
            # so by the time it reads this cancel that response exists.
            self._cancel_next_created = True
            self._send({"type": "response.cancel"})
            sent = True
        return sent

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        check_audio_end_ms(audio_end_ms)
        self._truncated.add(item_id)
        self._send(
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": int(audio_end_ms),
            }
        )

    def _send(self, event: dict[str, Any]) -> str:
        self._seq += 1
        event_id = f"hx_{self._seq}"
        event["event_id"] = event_id
        self._out.append(wire.dumps(event))
        return event_id

    def _send_session_update(self, *, full: bool) -> None:
        config = self._config
        if config is None:
            return
        wanted = {
            "instructions": wire.digest(config.instructions),
            "tools": wire.digest(config.tools),
            "voice": wire.digest(config.voice),
        }
        session: dict[str, Any] | None
        if full:
            session = wire.full_session(
                instructions=config.instructions,
                tools=config.tools,
                voice=config.voice,
                transcription_model=self._transcription_model,
            )
        else:
            session = self._changed_session(config, wanted)
            if session is None:
                return
        self._sent = wanted
        self._awaiting_ready = self._awaiting_ready or not self._ready
        self._send({"type": "session.update", "session": session})

    def _changed_session(self, config: _Config, wanted: dict[str, str]) -> dict[str, Any] | None:
        session: dict[str, Any] = {"type": "realtime"}
        if wanted["instructions"] != self._sent.get("instructions"):
            session["instructions"] = config.instructions
        if wanted["tools"] != self._sent.get("tools"):
            session["tools"] = config.tools
        if wanted["voice"] != self._sent.get("voice"):
            session["audio"] = {"output": {"voice": config.voice}}
        return session if len(session) > 1 else None

    # ------------------------------------------------------------ session events

    def _on_session_created(self, event: dict[str, Any]) -> None:
        wire.require_dict(event, "session")
        if self._config is None and not self._ready:
            # Nothing to configure: the session as created is the session we use.
            self._ready = True
            self._events.append(SessionReady(wire.optional_str(event["session"], "id")))

    def _on_session_updated(self, event: dict[str, Any]) -> None:
        session = wire.require_dict(event, "session")
        if self._awaiting_ready and not self._ready:
            self._awaiting_ready = False
            self._ready = True
            self._events.append(SessionReady(wire.optional_str(session, "id")))

    def _on_committed(self, event: dict[str, Any]) -> None:
        self._events.append(InputCommitted(wire.require_str(event, "item_id")))

    def _on_speech_started(self, event: dict[str, Any]) -> None:
        # Only with server VAD (not our PTT mode): the provider cuts the reply itself.
        if self._active_id is not None:
            self._events.append(Interrupted(self._active_id))

    def _on_item_done(self, event: dict[str, Any]) -> None:
        wire.require_dict(event, "item")

    def _on_truncated(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        self._events.append(ItemTruncated(item_id, wire.require_int(event, "audio_end_ms")))

    def _on_user_delta(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        delta = event.get("delta")
        if isinstance(delta, str) and delta:
            self._events.append(TranscriptDelta(Role.USER, item_id, delta))

    def _on_user_done(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        self._events.append(
            TranscriptDone(Role.USER, item_id, wire.require_str(event, "transcript"))
        )

    def _on_user_failed(self, event: dict[str, Any]) -> None:
        error = event.get("error") if isinstance(event.get("error"), dict) else None
        self._log.info(
            "provider_transcription_failed",
            item=wire.optional_str(event, "item_id"),
            problem=wire.optional_str(error, "message"),
        )

    # ------------------------------------------------------------ response events

    def _on_response_created(self, event: dict[str, Any]) -> None:
        body = wire.require_dict(event, "response")
        response_id = wire.require_str(body, "id")
        # GA: an out-of-band response (conversation "none") has no conversation_id.
        out_of_band = body.get("conversation_id") is None
        self._claim_pending_create(out_of_band)
        self._responses[response_id] = _Response(response_id, out_of_band)
        if not out_of_band:
            self._active_id = response_id
            if self._cancel_next_created:
                self._cancel_next_created = False
                self._cancelled.add(response_id)
        self._events.append(ResponseStarted(response_id, out_of_band))

    def _claim_pending_create(self, out_of_band: bool) -> None:
        for index, (_, oob) in enumerate(self._pending_creates):
            if oob == out_of_band:
                del self._pending_creates[index]
                return

    def _on_audio_delta(self, event: dict[str, Any]) -> None:
        response_id = wire.require_str(event, "response_id")
        item_id = wire.require_str(event, "item_id")
        if response_id in self._cancelled or item_id in self._truncated:
            self.dropped_audio_chunks += 1
            return
        pcm = wire.decode_audio(event)
        response = self._responses.get(response_id)
        if response is not None:
            response.had_audio = True
        self._events.append(AudioChunk(response_id, item_id, pcm))

    def _on_assistant_delta(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        if wire.require_str(event, "response_id") in self._cancelled:
            return
        self._events.append(
            TranscriptDelta(Role.ASSISTANT, item_id, wire.require_str(event, "delta"))
        )

    def _on_assistant_done(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        key = "transcript" if event["type"].endswith("transcript.done") else "text"
        self._events.append(TranscriptDone(Role.ASSISTANT, item_id, wire.require_str(event, key)))

    def _on_call_done(self, event: dict[str, Any]) -> None:
        self._report_call(
            wire.require_str(event, "response_id"),
            wire.require_str(event, "call_id"),
            wire.require_str(event, "name"),
            wire.require_str(event, "arguments"),
        )

    def _on_output_item_done(self, event: dict[str, Any]) -> None:
        item = wire.require_dict(event, "item")
        if item.get("type") == "function_call":
            self._report_item_call(wire.require_str(event, "response_id"), item)

    def _report_item_call(self, response_id: str, item: dict[str, Any]) -> None:
        call_id = wire.optional_str(item, "call_id")
        if call_id is None or call_id in self._reported_calls:
            return
        self._report_call(
            response_id,
            call_id,
            wire.require_str(item, "name"),
            wire.require_str(item, "arguments"),
        )

    def _report_call(self, response_id: str, call_id: str, name: str, arguments: str) -> None:
        if call_id in self._reported_calls:
            return
        self._reported_calls.add(call_id)
        call = ToolCall(response_id, call_id, name, arguments)
        self._unanswered[call_id] = name
        response = self._responses.get(response_id)
        if response is not None:
            response.calls.append(call)
        self._events.append(call)

    def _on_response_done(self, event: dict[str, Any]) -> None:
        body = wire.require_dict(event, "response")
        response_id = wire.require_str(body, "id")
        response = self._responses.get(response_id)
        if response is None:
            # A response we never saw start (created lost?): report it all the same.
            self._claim_pending_create(body.get("conversation_id") is None)
            response = _Response(response_id, body.get("conversation_id") is None)
        output = body.get("output")
        for item in output if isinstance(output, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call":
                self._report_item_call(response_id, item)
        status = _STATUS.get(str(body.get("status")), ResponseStatus.FAILED)
        self._finish(response, status, wire.response_reason(body))

    def _finish(self, response: _Response, status: ResponseStatus, reason: str | None) -> None:
        self._responses.pop(response.response_id, None)
        self._cancelled.discard(response.response_id)
        if self._active_id == response.response_id:
            self._active_id = None
        self._events.append(
            ResponseDone(
                response.response_id,
                status,
                tuple(response.calls),
                response.had_audio,
                reason,
                response.out_of_band,
            )
        )

    # ------------------------------------------------------------ errors

    def _on_error(self, event: dict[str, Any]) -> None:
        error = wire.require_dict(event, "error")
        code = wire.optional_str(error, "code") or wire.optional_str(error, "type") or "unknown"
        message = wire.optional_str(error, "message") or ""
        client_event_id = wire.optional_str(error, "event_id")
        self._forget_rejected_create(code, client_event_id)
        recoverable = code not in SESSION_ENDING_CODES
        level = logging.INFO if recoverable else logging.ERROR
        self._log.log(
            level,
            "provider_error",
            code=code,
            problem=message,
            client_event=client_event_id,
            recoverable=recoverable,
        )
        self._events.append(ProviderErrorEvent(code, message, recoverable, client_event_id))

    def _forget_rejected_create(self, code: str, client_event_id: str | None) -> None:
        # No response.created follows a rejected response.create (reference §1.7).
        for index, (event_id, _) in enumerate(self._pending_creates):
            if event_id == client_event_id:
                del self._pending_creates[index]
                return
        if code == "conversation_already_has_active_response" and self._pending_creates:
            self._pending_creates.pop()  # the newest create is the one refused
