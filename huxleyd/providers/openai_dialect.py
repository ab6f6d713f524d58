"""The OpenAI Realtime GA dialect, as the OpenAI and xAI cores share it.

Layer: pure protocol logic, no asyncio, no sockets. :class:`OpenAIDialectCore`
is everything both cores do the same way: the URL and bearer header,
configuration re-sent only where its digest changed (in full after every
connect), the push-to-talk commands, response tracking from
``response.create`` through ``response.created`` to ``response.done``, tool
calls collected per response (each reported once, whichever event names it
first), audio deltas (dropped for superseded responses and cut items, counted
in ``dropped_audio_chunks``) and ``error`` events. Where the dialects part,
the OpenAI behaviour is the default and a subclass overrides a named hook:

- ``_handlers``: a subclass adds the events only it understands;
  ``_ignored_events`` are the ones it reads and leaves;
- ``_full_session`` / ``_changed_session``: the ``session.update`` shape
  (GA's by default);
- ``_user_takes_floor(why)``: ``start_turn`` and ``send_user_text`` call it
  first (OpenAI: nothing; xAI supersedes the running reply);
- ``_live(response_id)``: do its deltas still reach the coordinator;
- ``_request_tag(body)``: the tag of ours a started response carries (OpenAI
  echoes the ``metadata`` of the ``response.create``; None where it does not);
- ``_response_started(response)``: a reported ``response.created``;
- ``_final_status(response, body)``: the status and reason of ``ResponseDone``;
- ``_response_slot_freed()``: a response ended or a create was refused.

What to call: nothing here directly; build
:class:`~huxleyd.providers.openai_core.OpenAIRealtimeCore` or
:class:`~huxleyd.providers.xai_core.XaiRealtimeCore`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from huxleyd.logs import EventLogger
from huxleyd.providers import openai_wire as wire
from huxleyd.providers.base import Capabilities
from huxleyd.providers.closes import CloseVerdict, openai_close
from huxleyd.providers.core import SansIOCore, check_audio_end_ms, check_pcm16, dumps
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
from huxleyd.providers.openai_wire import SessionConfig

SESSION_ENDING_CODES = frozenset(
    {"session_expired", "invalid_api_key", "insufficient_quota", "model_not_found"}
)
"""Error codes after which the session is useless. Every other error leaves the
socket open and the session usable (reference §1.7), so it is recoverable —
among them ``conversation_already_has_active_response``,
``input_audio_buffer_commit_empty`` and ``response_cancel_not_active``."""

STATUS = {
    "completed": ResponseStatus.COMPLETED,
    "cancelled": ResponseStatus.CANCELLED,
    "failed": ResponseStatus.FAILED,
    "incomplete": ResponseStatus.INCOMPLETE,
}
"""``response.status`` on the wire → ours (anything else counts as FAILED)."""


@dataclass(slots=True)
class PendingCreate:
    """A ``response.create`` we sent that no ``response.created`` answered yet."""

    event_id: str
    out_of_band: bool = False
    superseded: bool = False
    """The user took the floor before it started: its response is never reported."""
    tag: str | None = None
    """Our mark in the create's ``metadata`` (OpenAI), echoed by its response."""
    cancelled: bool = False
    """A ``response.cancel`` went out before it started: its response is cut at once.
    The mark lives and dies with this create (a refused create takes it along)."""


@dataclass(slots=True)
class TrackedResponse:
    """What we know about one response while it runs."""

    response_id: str
    out_of_band: bool = False
    superseded: bool = False
    """The user took the floor from it: its audio and transcript deltas are dropped."""
    reported: bool = True
    """Its ResponseStarted went to the coordinator (else nothing of it is reported)."""
    had_audio: bool = False
    calls: list[ToolCall] = field(default_factory=list)


class OpenAIDialectCore(SansIOCore):
    """The GA event handling shared by the OpenAI and xAI cores (see the module docstring)."""

    capabilities: Capabilities
    _ignored_events: frozenset[str] = wire.IGNORED_EVENTS

    def __init__(self, *, logger: EventLogger) -> None:
        super().__init__(logger=logger)
        self._config: SessionConfig | None = None
        self._model = ""
        self._seq = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "session.updated": self._on_session_updated,
            "input_audio_buffer.committed": self._on_committed,
            "input_audio_buffer.speech_started": self._on_speech_started,
            "conversation.item.input_audio_transcription.completed": self._on_user_done,
            "response.created": self._on_response_created,
            "response.output_audio.delta": self._on_audio_delta,
            "response.output_audio_transcript.delta": self._on_assistant_delta,
            "response.output_audio_transcript.done": self._on_assistant_done,
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
        self._pending: deque[PendingCreate] = deque()
        self._active_id: str | None = None
        self._responses: dict[str, TrackedResponse] = {}
        self._reported_calls: set[str] = set()
        self._unanswered: dict[str, str] = {}
        self._cut_items: set[str] = set()
        """Items the user heard only part of: their later audio is dropped."""
        self._ended_by: str | None = None
        """The code of the session-ending ``error`` event on this connection."""

    # ------------------------------------------------------------ connection

    def connection_url(self, base_url: str, model: str) -> str:
        """``base_url?model=…`` (``wss://…/v1/realtime`` for OpenAI and xAI alike)."""
        self._model = model
        separator = "&" if "?" in base_url else "?"
        return base_url + separator + urlencode({"model": model})

    def connection_headers(self, api_key: str | None) -> dict[str, str]:
        """Bearer auth; GA sends no ``OpenAI-Beta`` header."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def connection_opened(self) -> None:
        """Forget the old connection; queue the full configuration if there is one."""
        self._reset_connection()
        self._send_session_update()

    def connection_lost(self) -> None:
        """End every started response as FAILED (``connection_lost``)."""
        self._pending.clear()
        for response in list(self._responses.values()):
            self._finish(response, ResponseStatus.FAILED, "connection_lost")
        self._active_id = None

    def _reset_connection(self) -> None:
        self._out.clear()
        self._sent.clear()
        self._awaiting_ready = self._ready = False
        self._pending.clear()
        self._active_id = None
        self._responses.clear()
        self._reported_calls.clear()
        self._unanswered.clear()
        self._cut_items.clear()
        self._ended_by = None

    def close_verdict(self, code: int | None, reason: str, *, ready: bool) -> CloseVerdict:
        """What the end of this connection means (see :mod:`~huxleyd.providers.closes`)."""
        return openai_close(code, reason, ready=ready, ended_by=self._ended_by, model=self._model)

    # ------------------------------------------------------------ state

    @property
    def response_active(self) -> bool:
        return self._active_id is not None or any(
            not c.out_of_band and not c.superseded for c in self._pending
        )

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
        elif event_type not in self._ignored_events:
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
        self._config = SessionConfig(instructions, wire.function_tools(tools), voice)
        self._send_session_update()

    def start_turn(self) -> None:
        self._user_takes_floor("start_turn")
        self._send({"type": "input_audio_buffer.clear"})

    def append_audio(self, pcm: bytes) -> None:
        check_pcm16(pcm)
        if pcm:
            self._out.append(wire.append_frame(pcm))

    def end_turn(self) -> None:
        self._send({"type": "input_audio_buffer.commit"})

    def send_user_text(self, text: str) -> None:
        self._user_takes_floor("text_turn")
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

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        """The local record of a cut: later audio of ``item_id`` is dropped here.

        Nothing goes on the wire at this level (xAI has no truncate); the
        OpenAI core also tells the server.
        """
        check_audio_end_ms(audio_end_ms)
        self._cut_items.add(item_id)

    def _user_takes_floor(self, why: str) -> None:
        """The user starts a turn (``why``): hook for dialects that cut replies locally."""

    def _send(self, event: dict[str, Any]) -> str:
        self._seq += 1
        event_id = f"hx_{self._seq}"
        event["event_id"] = event_id
        self._out.append(dumps(event))
        return event_id

    def _send_create(
        self, event: dict[str, Any], *, out_of_band: bool = False, tag: str | None = None
    ) -> None:
        """Send a ``response.create`` and wait for the ``response.created`` it causes."""
        self._pending.append(PendingCreate(self._send(event), out_of_band, tag=tag))

    def _send_session_update(self) -> None:
        """All of the configuration on a fresh connection, else only the parts that changed."""
        config = self._config
        if config is None:
            return
        wanted = config.digests()
        session: dict[str, Any] | None
        if not self._sent:
            session = self._full_session(config)
        else:
            changed = {key: self._sent.get(key) != digest for key, digest in wanted.items()}
            session = self._changed_session(config, changed)
            if session is None:
                return
        self._sent = wanted
        self._awaiting_ready = self._awaiting_ready or not self._ready
        self._send({"type": "session.update", "session": session})

    def _full_session(self, config: SessionConfig) -> dict[str, Any]:
        """The whole ``session`` of a ``session.update`` (GA, no input transcription)."""
        return wire.full_session(config, transcription_model=None)

    def _changed_session(
        self, config: SessionConfig, changed: Mapping[str, bool]
    ) -> dict[str, Any] | None:
        """The parts flagged in ``changed``; None when there are none."""
        return wire.changed_session(config, changed)

    # ------------------------------------------------------------ session events

    def _ready_as_created(self, body: dict[str, Any]) -> None:
        """The first server event arrived with ``body`` (the session or conversation)."""
        if self._config is None and not self._ready:
            # Nothing to configure: the session as created is the session we use.
            self._ready = True
            self._events.append(SessionReady(wire.optional_str(body, "id")))

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

    def _live(self, response_id: str) -> bool:
        """Deltas of this response still reach the coordinator (unknown ones do)."""
        response = self._responses.get(response_id)
        return response is None or not response.superseded

    def _request_tag(self, body: dict[str, Any]) -> str | None:
        """Our tag echoed in a response body (hook; the dialect base has none)."""
        return None

    def _track(self, response_id: str, body: dict[str, Any]) -> TrackedResponse:
        """Start tracking a response, answering the create that caused it.

        Which create: the one whose tag the response echoes, else the oldest
        (the server starts responses in the order it read the creates). What
        the response is — out of band or not, cut before it started — comes
        from that create, i.e. from what *we* sent, never from an optional
        field of the server's body. A response no create of ours explains
        (server VAD) is an ordinary in-conversation one.
        """
        create = self._claim_create(self._request_tag(body))
        superseded = create is not None and create.superseded
        response = TrackedResponse(
            response_id,
            out_of_band=create is not None and create.out_of_band,
            superseded=superseded or (create is not None and create.cancelled),
            reported=not superseded,
        )
        self._responses[response_id] = response
        return response

    def _claim_create(self, tag: str | None) -> PendingCreate | None:
        if tag is not None:
            for index, create in enumerate(self._pending):
                if create.tag == tag:
                    del self._pending[index]
                    return create
        return self._pending.popleft() if self._pending else None

    def _on_response_created(self, event: dict[str, Any]) -> None:
        body = wire.require_dict(event, "response")
        response = self._track(wire.require_str(body, "id"), body)
        if not response.reported:
            self._log.debug("provider_response_unreported", response=response.response_id)
            return
        if not response.out_of_band:
            self._active_id = response.response_id
        self._response_started(response)
        self._events.append(ResponseStarted(response.response_id, response.out_of_band))

    def _response_started(self, response: TrackedResponse) -> None:
        """A reported response started (hook; before its ResponseStarted is queued)."""

    def _on_audio_delta(self, event: dict[str, Any]) -> None:
        response_id = wire.require_str(event, "response_id")
        item_id = wire.require_str(event, "item_id")
        if not self._live(response_id) or item_id in self._cut_items:
            self.dropped_audio_chunks += 1
            return
        pcm = wire.decode_audio(event)
        response = self._responses.get(response_id)
        if response is not None:
            response.had_audio = True
        self._events.append(AudioChunk(response_id, item_id, pcm))

    def _on_assistant_delta(self, event: dict[str, Any]) -> None:
        item_id = wire.require_str(event, "item_id")
        if not self._live(wire.require_str(event, "response_id")):
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
            response = self._track(response_id, body)
        output = body.get("output")
        for item in output if isinstance(output, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call":
                self._report_item_call(response_id, item)
        self._finish(response, *self._final_status(response, body))

    def _final_status(
        self, response: TrackedResponse, body: dict[str, Any]
    ) -> tuple[ResponseStatus, str | None]:
        """What the server says: its status (unknown ones FAILED) and why it ended early."""
        status = STATUS.get(str(body.get("status")), ResponseStatus.FAILED)
        return status, wire.response_reason(body)

    def _finish(
        self, response: TrackedResponse, status: ResponseStatus, reason: str | None
    ) -> None:
        self._responses.pop(response.response_id, None)
        if self._active_id == response.response_id:
            self._active_id = None
        if response.reported:
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
        self._response_slot_freed()

    def _response_slot_freed(self) -> None:
        """A response ended or a create was refused (hook: send what was held back)."""

    # ------------------------------------------------------------ errors

    def _on_error(self, event: dict[str, Any]) -> None:
        error = wire.require_dict(event, "error")
        code = wire.optional_str(error, "code") or wire.optional_str(error, "type") or "unknown"
        message = wire.optional_str(error, "message") or ""
        client_event_id = wire.optional_str(error, "event_id")
        self._forget_rejected_create(code, client_event_id)
        recoverable = code not in SESSION_ENDING_CODES
        if not recoverable:
            self._ended_by = code
        # Not logged here: the event is the report, and the turn layer logs
        # each provider_error once, whatever the provider.
        self._events.append(ProviderErrorEvent(code, message, recoverable, client_event_id))
        self._response_slot_freed()

    def _forget_rejected_create(self, code: str, client_event_id: str | None) -> None:
        # No response.created follows a rejected response.create (reference §1.7).
        for index, create in enumerate(self._pending):
            if create.event_id == client_event_id:
                del self._pending[index]
                return
        if code == "conversation_already_has_active_response" and self._pending:
            self._pending.pop()  # the newest create is the one refused
