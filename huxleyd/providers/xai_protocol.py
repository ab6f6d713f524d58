"""The sans-I/O xAI voice agent core (the OpenAI-like dialect, see :mod:`xai_wire`).

Layer: pure protocol logic, no asyncio, no sockets; the transport drives it
exactly like the OpenAI core.

xAI has no ``conversation.item.truncate`` and we do not rely on
``response.cancel``, so barge-in is a *local cut*
(``LOCAL_CUT_ASYNC_CONFIRMATION``): the coordinator silences the speaker and
logs what was heard; the provider's response runs on to its natural end. To
keep that invisible, this core *supersedes* the running response whenever
the user takes the floor (``start_turn``, ``send_user_text``, a new
``request_response``, or ``cancel_response``):

- a superseded response reports nothing more: no audio (counted in
  ``dropped_audio_chunks``), no transcript, no tool call — its calls are
  answered here with a cancelled output, since every call needs one — and
  only a ``ResponseDone`` when its ``ResponseStarted`` had been reported;
- a ``response.create`` that was sent but not yet answered is superseded
  too: the response it starts is never reported at all;
- a new ``response.create`` waits until the running response is done
  (one in-conversation response at a time, as in the OpenAI dialect). A
  second request while one waits goes out at once: the running response may
  be hung, and the server's refusal would be recoverable.
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
from huxleyd.providers import xai_wire
from huxleyd.providers.base import Capabilities, InterruptAcceptance

# CANCELLED_OUTPUT is re-exported: callers have always found it here.
from huxleyd.providers.core import CANCELLED_OUTPUT as CANCELLED_OUTPUT
from huxleyd.providers.core import SansIOCore, check_audio_end_ms, check_pcm16
from huxleyd.providers.events import (
    AudioChunk,
    InputCommitted,
    Interrupted,
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
from huxleyd.providers.openai_dialect import SESSION_ENDING_CODES

XAI_CAPABILITIES = Capabilities(
    text_input=True,
    mid_session_instructions=True,
    mid_session_tools=True,
    response_cancel=False,
    truncate=False,
    interrupt_acceptance=InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION,
    input_rate_hz=xai_wire.RATE_HZ,
    output_rate_hz=xai_wire.RATE_HZ,
)


_STATUS = {
    "completed": ResponseStatus.COMPLETED,
    "cancelled": ResponseStatus.CANCELLED,
    "failed": ResponseStatus.FAILED,
    "incomplete": ResponseStatus.INCOMPLETE,
}


@dataclass(slots=True)
class _Response:
    response_id: str
    superseded: bool
    reported: bool
    """Its ResponseStarted went to the coordinator."""
    had_audio: bool = False
    calls: list[ToolCall] = field(default_factory=list)


@dataclass(slots=True)
class _Create:
    event_id: str
    superseded: bool = False


class XaiRealtimeProtocol(SansIOCore):
    """xAI voice agent, push-to-talk (``turn_detection: null``), PCM16 24 kHz."""

    capabilities = XAI_CAPABILITIES

    def __init__(self, *, logger: EventLogger | None = None) -> None:
        super().__init__(logger=logger or get_logger("huxleyd.providers.xai"))
        self._config: tuple[str, list[dict[str, Any]], str] | None = None
        self._seq = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "conversation.created": self._on_conversation_created,
            "session.updated": self._on_session_updated,
            "input_audio_buffer.committed": self._on_committed,
            "input_audio_buffer.speech_started": self._on_speech_started,
            "conversation.item.input_audio_transcription.completed": self._on_user_done,
            "response.created": self._on_response_created,
            "response.output_audio.delta": self._on_audio_delta,
            "response.output_audio_transcript.delta": self._on_assistant_delta,
            "response.text.delta": self._on_assistant_delta,
            "response.output_audio_transcript.done": self._on_assistant_done,
            "response.text.done": self._on_assistant_done,
            "response.function_call_arguments.done": self._on_call_done,
            "response.output_item.done": self._on_output_item_done,
            "response.done": self._on_response_done,
            "error": self._on_error,
        }
        # Per connection; _reset_connection() empties it.
        self._sent: dict[str, str] = {}
        self._awaiting_ready = False
        self._ready = False
        self._pending: deque[_Create] = deque()
        self._deferred: dict[str, Any] | None = None
        self._responses: dict[str, _Response] = {}
        self._active_id: str | None = None
        self._reported_calls: set[str] = set()
        self._unanswered: dict[str, str] = {}
        self._cut_items: set[str] = set()

    # ------------------------------------------------------------ connection

    def connection_url(self, base_url: str, model: str) -> str:
        """``wss://api.x.ai/v1/realtime?model=…``."""
        separator = "&" if "?" in base_url else "?"
        return base_url + separator + urlencode({"model": model})

    def connection_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def connection_opened(self) -> None:
        self._reset_connection()
        if self._config is not None:
            self._send_session_update()

    def connection_lost(self) -> None:
        """Every reported response ends FAILED (``connection_lost``)."""
        self._pending.clear()
        self._deferred = None
        for response in list(self._responses.values()):
            self._finish(response, ResponseStatus.FAILED, "connection_lost")
        self._active_id = None

    def _reset_connection(self) -> None:
        self._out.clear()
        self._sent.clear()
        self._awaiting_ready = self._ready = False
        self._pending.clear()
        self._deferred = None
        self._responses.clear()
        self._active_id = None
        self._reported_calls.clear()
        self._unanswered.clear()
        self._cut_items.clear()

    # ------------------------------------------------------------ state

    @property
    def response_active(self) -> bool:
        return (
            self._active_id is not None
            or self._deferred is not None
            or any(not c.superseded for c in self._pending)
        )

    @property
    def active_response_id(self) -> str | None:
        return self._active_id

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return frozenset(self._unanswered)

    @property
    def session_ready(self) -> bool:
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
        elif event_type not in xai_wire.IGNORED_EVENTS:
            self._once(f"unknown:{event_type}", "provider_event_unknown", type=event_type)

    # ------------------------------------------------------------ commands

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        self._config = (instructions, wire.function_tools(tools), voice)
        self._send_session_update()

    def start_turn(self) -> None:
        self._supersede_running("start_turn")
        self._send({"type": "input_audio_buffer.clear"})

    def append_audio(self, pcm: bytes) -> None:
        check_pcm16(pcm)
        if pcm:
            self._out.append(wire.append_frame(pcm))

    def end_turn(self) -> None:
        self._send({"type": "input_audio_buffer.commit"})

    def send_user_text(self, text: str) -> None:
        self._supersede_running("text_turn")
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
        """``response.create``, held back while a response runs (see the module docstring)."""
        if out_of_band:
            self._once("oob", "provider_option_unsupported", option="out_of_band", kind="xai")
        if metadata:
            self._once("metadata", "provider_option_unsupported", option="metadata", kind="xai")
        event: dict[str, Any] = {"type": "response.create"}
        if instructions is not None:
            event["response"] = {"instructions": instructions}
        waited = self._deferred is not None
        self._supersede_running("new_request")
        if self._responses or self._pending:
            if not waited:
                self._deferred = event
                return
            self._deferred = None
            self._log.info("provider_request_forced", note="a running response did not end")
        self._send_create(event)

    def cancel_response(self) -> bool:
        """The local cut: the running response is superseded. Nothing is sent: False."""
        self._supersede_running("cancel")
        self._deferred = None
        return False

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        """No wire event in this dialect: a local record (later audio of the item is dropped)."""
        check_audio_end_ms(audio_end_ms)
        self._cut_items.add(item_id)

    def _send(self, event: dict[str, Any]) -> str:
        self._seq += 1
        event_id = f"hx_{self._seq}"
        event["event_id"] = event_id
        self._out.append(wire.dumps(event))
        return event_id

    def _send_create(self, event: dict[str, Any]) -> None:
        self._pending.append(_Create(self._send(event)))

    def _send_session_update(self) -> None:
        if self._config is None:
            return
        instructions, tools, voice = self._config
        wanted = {
            "instructions": wire.digest(instructions),
            "tools": wire.digest(tools),
            "voice": wire.digest(voice),
        }
        session: dict[str, Any] | None
        if not self._sent:
            session = xai_wire.full_session(instructions=instructions, tools=tools, voice=voice)
        else:
            changed = {key: self._sent.get(key) != digest for key, digest in wanted.items()}
            session = xai_wire.changed_session(
                instructions=instructions, tools=tools, voice=voice, changed=changed
            )
            if session is None:
                return
        self._sent = wanted
        self._awaiting_ready = self._awaiting_ready or not self._ready
        self._send({"type": "session.update", "session": session})

    def _supersede_running(self, why: str) -> None:
        for create in self._pending:
            create.superseded = True
        for response in self._responses.values():
            if not response.superseded:
                response.superseded = True
                self._log.debug(
                    "provider_response_superseded", response=response.response_id, why=why
                )
        self._active_id = None

    # ------------------------------------------------------------ session events

    def _on_conversation_created(self, event: dict[str, Any]) -> None:
        conversation = wire.require_dict(event, "conversation")
        if self._config is None and not self._ready:
            # Nothing to configure: the session as created is the session we use.
            self._ready = True
            self._events.append(SessionReady(wire.optional_str(conversation, "id")))

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

    def _on_user_done(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        self._events.append(
            TranscriptDone(Role.USER, item_id, wire.require_str(event, "transcript"))
        )

    # ------------------------------------------------------------ response events

    def _live(self, response_id: str) -> _Response | None:
        """The response if it is still wanted, else None (superseded or unknown)."""
        response = self._responses.get(response_id)
        return response if response is not None and not response.superseded else None

    def _on_response_created(self, event: dict[str, Any]) -> None:
        response_id = wire.require_str(wire.require_dict(event, "response"), "id")
        create = self._pending.popleft() if self._pending else None
        superseded = create is not None and create.superseded
        response = _Response(response_id, superseded=superseded, reported=not superseded)
        self._responses[response_id] = response
        if superseded:
            self._log.debug("provider_response_unreported", response=response_id)
            return
        self._active_id = response_id
        self._events.append(ResponseStarted(response_id))

    def _on_audio_delta(self, event: dict[str, Any]) -> None:
        response_id = wire.require_str(event, "response_id")
        item_id = wire.require_str(event, "item_id")
        response = self._live(response_id)
        if response is None or item_id in self._cut_items:
            self.dropped_audio_chunks += 1
            return
        pcm = wire.decode_audio(event)
        response.had_audio = True
        self._events.append(AudioChunk(response_id, item_id, pcm))

    def _on_assistant_delta(self, event: dict[str, Any]) -> None:
        if self._live(wire.require_str(event, "response_id")) is None:
            return
        self._events.append(
            TranscriptDelta(
                Role.ASSISTANT, wire.require_str(event, "item_id"), wire.require_str(event, "delta")
            )
        )

    def _on_assistant_done(self, event: dict[str, Any]) -> None:
        if self._live(wire.require_str(event, "response_id")) is None:
            return
        key = "transcript" if "transcript" in event["type"] else "text"
        self._events.append(
            TranscriptDone(
                Role.ASSISTANT, wire.require_str(event, "item_id"), wire.require_str(event, key)
            )
        )

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
        response = self._live(response_id)
        if response is None and response_id in self._responses:
            # Nobody wants this reply any more, but the call still needs an output.
            self._log.info("provider_call_of_cut_reply_answered", call_id=call_id, tool=name)
            self.send_tool_output(call_id, CANCELLED_OUTPUT)
            return
        call = ToolCall(response_id, call_id, name, arguments)
        self._unanswered[call_id] = name
        if response is not None:
            response.calls.append(call)
        self._events.append(call)

    def _on_response_done(self, event: dict[str, Any]) -> None:
        body = wire.require_dict(event, "response")
        response_id = wire.require_str(body, "id")
        response = self._responses.get(response_id)
        if response is None:
            # Its response.created was lost: report it all the same.
            create = self._pending.popleft() if self._pending else None
            superseded = create is not None and create.superseded
            response = _Response(response_id, superseded=superseded, reported=not superseded)
            self._responses[response_id] = response
        output = body.get("output")
        for item in output if isinstance(output, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call":
                self._report_item_call(response_id, item)
        status = _STATUS.get(str(body.get("status")), ResponseStatus.FAILED)
        if response.superseded:
            status = ResponseStatus.CANCELLED
        self._finish(response, status, wire.response_reason(body) or _cut_reason(response))

    def _finish(self, response: _Response, status: ResponseStatus, reason: str | None) -> None:
        self._responses.pop(response.response_id, None)
        if self._active_id == response.response_id:
            self._active_id = None
        if response.reported:
            self._events.append(
                ResponseDone(
                    response.response_id, status, tuple(response.calls), response.had_audio, reason
                )
            )
        self._send_deferred()

    def _send_deferred(self) -> None:
        if self._deferred is not None and not self._responses and not self._pending:
            event, self._deferred = self._deferred, None
            self._send_create(event)

    # ------------------------------------------------------------ errors

    def _on_error(self, event: dict[str, Any]) -> None:
        error = wire.require_dict(event, "error")
        code = wire.optional_str(error, "code") or wire.optional_str(error, "type") or "unknown"
        message = wire.optional_str(error, "message") or ""
        client_event_id = wire.optional_str(error, "event_id")
        self._forget_rejected_create(code, client_event_id)
        recoverable = code not in SESSION_ENDING_CODES
        self._log.log(
            logging.INFO if recoverable else logging.ERROR,
            "provider_error",
            code=code,
            problem=message,
            client_event=client_event_id,
            recoverable=recoverable,
        )
        self._events.append(ProviderErrorEvent(code, message, recoverable, client_event_id))
        self._send_deferred()

    def _forget_rejected_create(self, code: str, client_event_id: str | None) -> None:
        for create in self._pending:
            if create.event_id == client_event_id:
                self._pending.remove(create)
                return
        if code == "conversation_already_has_active_response" and self._pending:
            self._pending.pop()  # the newest create is the one refused


def _cut_reason(response: _Response) -> str | None:
    return "local_cut" if response.superseded else None
