# longer than 600 lines: one provider's dialect (setup, turns, tools, resumption, closes), a section each; its wire format is gemini_wire.py
"""The sans-I/O Gemini Live (BidiGenerateContent) core.

Layer: pure protocol logic, no asyncio, no sockets. The transport drives it
like every core; two optional hooks of the transport serve it here:
``reconnect_wanted`` (a proactive reconnect with the resumption handle) and
``connection_closed(code, reason)`` (Gemini reports errors only as close
codes).

How the coordinator's terms map onto Gemini:

- ``configure`` is sent as the ``setup`` (the first message of every
  connection). The setup is fixed for the connection's life, so a later
  change asks for a reconnect, and the next setup carries the change *and*
  the resumption handle: the conversation goes on.
- A push-to-talk turn is ``activityStart``, 16 kHz ``realtimeInput.audio``,
  ``activityEnd`` (automatic activity detection is off). ``activityStart``
  waits for ``hold_ms`` of audio, so a press too short to commit never
  reaches the provider (``start_turn`` drops it, as OpenAI's buffer clear
  would). The model answers every ended activity by itself;
  ``request_response`` then sends nothing.
- Text turns and per-response instructions go out as ``clientContent``
  with ``turnComplete`` (Gemini has no per-response instructions: the part
  of the override beyond the session's instructions becomes the user turn).
- Gemini has no response ids: each model turn gets a stable synthetic one
  (``gemini-<connection>-<n>``, also its item id). A ``toolCall`` ends that
  response (the model waits for ``toolResponse``); its continuation is a new
  response. ``turnComplete`` ends it, ``interrupted`` cuts it.
- No cancel, no truncate: barge-in is a local cut (the coordinator silences
  the speaker). This core supersedes the open model turn when the user takes
  the floor, as the xAI core does: nothing more of it is reported, its late
  calls are answered here with a cancelled output, and the server's
  ``interrupted`` confirms the cut later.
- ``goAway`` and ``sessionResumptionUpdate``: the newest resumable handle is
  kept; after a ``goAway`` (or a configuration change) ``reconnect_wanted``
  says so once the session is idle (no turn, no reply, no open tool call).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from huxleyd.errors import ProviderProtocolError
from huxleyd.logs import EventLogger, get_logger
from huxleyd.pcm import ms_to_bytes
from huxleyd.providers import gemini_wire as wire
from huxleyd.providers.base import Capabilities, InterruptAcceptance
from huxleyd.providers.closes import NOT_FOUND_FOR_NOW, CloseVerdict, gemini_close
from huxleyd.providers.core import (
    CANCELLED_OUTPUT,
    CutReplyNotes,
    SansIOCore,
    check_pcm16,
    dumps,
    parse_json_object,
)
from huxleyd.providers.events import (
    AudioChunk,
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

GEMINI_CAPABILITIES = Capabilities(
    text_input=True,
    mid_session_instructions=False,
    mid_session_tools=False,
    response_cancel=False,
    truncate=False,
    interrupt_acceptance=InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION,
    input_rate_hz=wire.INPUT_RATE_HZ,
    output_rate_hz=wire.OUTPUT_RATE_HZ,
)

HOLD_MS = 200
"""Audio held back before ``activityStart`` (longer than the coordinator's
shortest turn, so a too-short press never reaches the provider)."""


@dataclass(slots=True)
class _Turn:
    """One model turn: our synthetic response."""

    response_id: str
    reported: bool
    superseded: bool = False
    had_audio: bool = False
    calls: list[ToolCall] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    """The output transcription so far: Gemini sends no final transcript, so the
    turn's end reports one (as OpenAI's ``…transcript.done`` does)."""


@dataclass(frozen=True, slots=True)
class _Config:
    instructions: str
    declarations: list[dict[str, Any]]
    voice: str

    def digest(self) -> str:
        return json.dumps([self.instructions, self.declarations, self.voice], sort_keys=True)


class GeminiLiveCore(SansIOCore):
    """Gemini Live, push-to-talk, PCM16 16 kHz in / 24 kHz out, with session resumption."""

    capabilities = GEMINI_CAPABILITIES

    # longer than 50 lines: the core's state declared in one place, each per-connection field with why
    def __init__(
        self,
        *,
        model: str = "",
        hold_ms: int = HOLD_MS,
        compression_trigger_tokens: int = 0,
        logger: EventLogger | None = None,
    ) -> None:
        super().__init__(logger=logger or get_logger("huxleyd.providers.gemini"))
        self._model = model
        self._compression_trigger_tokens = compression_trigger_tokens
        self._hold_bytes = ms_to_bytes(hold_ms, wire.INPUT_RATE_HZ)
        self._config: _Config | None = None
        self._handle: str | None = None
        self._reconnect_reason: str | None = None
        self._connections = 0
        self._turn_seq = 0
        self.resumed_connections = 0
        """Connections whose setup carried a resumption handle."""
        self._parts: tuple[tuple[str, Callable[[dict[str, Any]], None]], ...] = (
            ("setupComplete", self._on_setup_complete),
            ("serverContent", self._on_server_content),
            ("toolCall", self._on_tool_call),
            ("toolCallCancellation", self._on_tool_call_cancellation),
            ("goAway", self._on_go_away),
            ("sessionResumptionUpdate", self._on_resumption_update),
        )
        """The parts a server message may carry (several at once), handled in this order."""
        # Per connection; _reset_connection() empties it.
        self._connected = False
        self._setup_digest: str | None = None
        self._ready = False
        self._in_turn = False
        """start_turn was called and the turn is not ended: audio belongs to it."""
        self._activity_open = False
        self._held = bytearray()
        self._texts: list[str] = []
        self._triggered = False
        """An activityEnd or toolResponse went out since the last request_response."""
        self._requested = False
        self._discard = 0
        """Model turns to swallow: answers to activities the user abandoned."""
        self._after_tool_call = False
        self._turn: _Turn | None = None
        self._unanswered: dict[str, str] = {}
        self._cancelled_calls: set[str] = set()
        self._close: tuple[int | None, str] | None = None
        self._user_item = 0
        self._notes = CutReplyNotes(output_rate_hz=wire.OUTPUT_RATE_HZ, logger=self._log)
        """The open model turn's text and audio; the note a cut leaves for the next turn."""
        self._resuming = False
        """This connection's setup carried a resumption handle."""
        self._go_away = False
        """The server sent ``goAway`` on this connection."""
        self._not_found_closes = 0
        """Tries in a row refused with a generic "not found" before setupComplete."""
        self._time_left_s: float | None = None
        """``goAway``'s time left, until the transport took it."""

    # ------------------------------------------------------------ connection

    def connection_url(self, base_url: str, model: str) -> str:
        """The BidiGenerateContent endpoint as given; ``model`` goes in the setup
        (remembered here when the core was built without one)."""
        self._model = self._model or model
        return base_url

    def connection_headers(self, api_key: str | None) -> dict[str, str]:
        """The key as ``x-goog-api-key`` (not ``?key=``: URLs end up in logs)."""
        return {"x-goog-api-key": api_key} if api_key else {}

    def connection_opened(self) -> None:
        in_turn = self._in_turn
        self._reset_connection()
        self._connected = True
        self._connections += 1
        self._reconnect_reason = None
        self._resuming = self._go_away = False
        self._time_left_s = None
        self._in_turn = in_turn  # the user is still holding the button: start again
        self._send_setup()

    def connection_closed(self, code: int | None, reason: str) -> None:
        """The close frame the server sent (or none): how Gemini reports errors."""
        self._close = (code, reason)

    def connection_lost(self) -> None:
        close, self._close = self._close, None
        code, reason = close if close is not None else (None, "")
        error = wire.is_error_close(code)
        why = f"{wire.close_code_name(code)}: {reason}".strip(": ") if error else "connection_lost"
        if error and self._resuming and not self._ready and self._handle is not None:
            # The server refused the handle (expired, or from another model):
            # the next setup starts a fresh session instead of failing forever.
            # It heals itself: this WARNING is its one line, no error event.
            self._log.warning("provider_resume_refused", code=code, problem=reason)
            self._handle = None
            error = False
        turn, self._turn = self._turn, None
        if turn is not None and turn.reported:
            if error:
                self._log.warning("provider_closed_with_error", code=code, problem=reason)
            self._end(turn, ResponseStatus.FAILED, why)
        elif error:
            # The event is the report: the turn layer logs it once (provider_error).
            self._events.append(
                ProviderErrorEvent(wire.close_code_name(code), reason, recoverable=False)
            )
        self._connected = False

    def close_verdict(self, code: int | None, reason: str, *, ready: bool) -> CloseVerdict:
        """What the end of this connection means (see :mod:`~huxleyd.providers.closes`)."""
        verdict = gemini_close(
            code,
            reason,
            ready=ready,
            resumed=self._resuming,
            go_away=self._go_away,
            model=self._model,
            not_found_before=self._not_found_closes,
        )
        if verdict.reason == NOT_FOUND_FOR_NOW:
            self._not_found_closes += 1
        else:
            self._not_found_closes = 0
        return verdict

    def _reset_connection(self) -> None:
        self._out.clear()
        self._setup_digest = None
        self._ready = self._activity_open = self._in_turn = False
        self._held.clear()
        self._texts.clear()
        self._triggered = self._requested = self._after_tool_call = False
        self._discard = 0
        self._turn = None
        self._unanswered.clear()
        self._cancelled_calls.clear()

    # ------------------------------------------------------------ state

    @property
    def response_active(self) -> bool:
        return self._requested or self.active_response_id is not None

    @property
    def active_response_id(self) -> str | None:
        turn = self._turn
        return turn.response_id if turn is not None and not turn.superseded else None

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return frozenset(self._unanswered)

    @property
    def session_ready(self) -> bool:
        return self._ready

    @property
    def resumption_handle(self) -> str | None:
        """The newest resumable session handle the server gave."""
        return self._handle

    def take_time_left_s(self) -> float | None:
        """The time left a ``goAway`` just gave (once): a renewal that waits for
        the listener must still close before it runs out."""
        left, self._time_left_s = self._time_left_s, None
        return left

    @property
    def reconnect_wanted(self) -> str | None:
        """Why the transport should reconnect now (resuming), or None. Only when idle."""
        if self._reconnect_reason is None or not self._connected:
            return None
        busy = (
            self._in_turn
            or self._activity_open
            or self._requested
            or self._turn is not None
            or self._unanswered
        )
        return None if busy else self._reconnect_reason

    # ------------------------------------------------------------ sans-I/O

    def _receive_frame(self, frame: str | bytes) -> None:
        """One server message, text or binary (``receive`` reports what fails here)."""
        self._dispatch(parse_json_object(frame))

    def _dispatch(self, message: dict[str, Any]) -> None:
        known = False
        for key, handler in self._parts:
            body = wire.get_dict(message, key)
            if body is not None:
                known = True
                handler(body)
        if not known:
            for key in message:
                if wire.snake(key) not in _IGNORED_KEYS:
                    self._once(f"unknown:{key}", "provider_message_unknown", key=key)

    # ------------------------------------------------------------ commands

    def configure(
        self, *, instructions: str, tools: Sequence[Mapping[str, Any]], voice: str
    ) -> None:
        """Kept for the next setup; a change after this connection's setup asks to reconnect."""
        config = _Config(instructions, wire.function_declarations(tools), voice)
        changed = self._config is None or config.digest() != self._config.digest()
        self._config = config
        if not self._connected:
            return
        if self._setup_digest is None:
            self._send_setup()
        elif changed and config.digest() != self._setup_digest:
            self._reconnect_reason = "configuration_changed"
            self._log.info("provider_reconnect_planned", why="configuration_changed")

    def start_turn(self) -> None:
        self._supersede("start_turn")
        note = self._notes.take()
        if note is not None:
            # Context only (turnComplete false): the model does not answer it.
            self._out.append(wire.client_content([note], turn_complete=False))
        if self._activity_open:
            # The provider heard part of a turn we cannot take back: end it and
            # swallow the answer.
            self._out.append(wire.activity_message("activityEnd"))
            self._activity_open = False
            self._discard += 1
        self._held.clear()
        self._in_turn = True

    def append_audio(self, pcm: bytes) -> None:
        check_pcm16(pcm)
        if not pcm:
            return
        if self._activity_open:
            self._out.append(wire.audio_message(pcm))
            return
        self._in_turn = True
        self._held += pcm
        if len(self._held) >= self._hold_bytes:
            self._open_activity()

    def end_turn(self) -> None:
        """``activityEnd``: the model will answer. Nothing held and nothing sent: an error event."""
        if not self._activity_open and self._held:
            self._open_activity()
        self._in_turn = False
        if not self._activity_open:
            self._events.append(
                ProviderErrorEvent(
                    "input_audio_buffer_commit_empty", "no audio in this turn", recoverable=True
                )
            )
            return
        self._out.append(wire.activity_message("activityEnd"))
        self._activity_open = False
        self._triggered = True

    def _open_activity(self) -> None:
        self._supersede("activity")
        self._out.append(wire.activity_message("activityStart"))
        self._activity_open = True
        if self._held:
            self._out.append(wire.audio_message(bytes(self._held)))
            self._held.clear()

    def send_user_text(self, text: str) -> None:
        self._supersede("text_turn")
        note = self._notes.take()
        if note is not None:
            self._texts.append(note)
        self._texts.append(text)

    def send_tool_output(self, call_id: str, output: str) -> None:
        name = self._unanswered.pop(call_id, None)
        if call_id in self._cancelled_calls or name is None:
            self._log.info("provider_tool_output_dropped", call_id=call_id, why="not pending")
            return
        self._out.append(wire.tool_response(call_id, name, output))
        self._triggered = True

    def request_response(
        self,
        *,
        instructions: str | None = None,
        out_of_band: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        """The model answers activities and tool responses by itself; text needs ``clientContent``."""
        if out_of_band:
            self._once("oob", "provider_option_unsupported", option="out_of_band", kind="gemini")
        prompt = self._prompt_of(instructions)
        if prompt:
            self._texts.append(prompt)
        if self._texts or not self._triggered:
            self._supersede("request")
            self._out.append(wire.client_content(self._texts))
            self._texts = []
        self._triggered = False
        self._requested = True

    def _prompt_of(self, instructions: str | None) -> str:
        if not instructions:
            return ""
        base = self._config.instructions if self._config is not None else ""
        if base and instructions.startswith(base):
            return instructions[len(base) :].strip()
        return instructions.strip()

    def cancel_response(self) -> bool:
        """The local cut: nothing more of the open turn is reported. Nothing is sent: False."""
        self._supersede("cancel")
        return False

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        """No truncate in Gemini: the cut is local (``cancel_response`` already dropped
        the rest), and the history keeps the whole reply, so a context note before
        the user's next turn says what was really heard."""
        self._notes.cut(item_id, audio_end_ms)

    def _supersede(self, why: str) -> None:
        turn = self._turn
        if turn is not None and not turn.superseded:
            turn.superseded = True
            self._log.debug("provider_response_superseded", response=turn.response_id, why=why)
        self._requested = False

    def _send_setup(self) -> None:
        config = self._config
        if config is None:
            return
        self._setup_digest = config.digest()
        if self._handle is not None:
            self.resumed_connections += 1
            self._resuming = True
        self._log.info("provider_setup", resumed=self._handle is not None, model=self._model)
        message = wire.setup_message(
            model=self._model,
            instructions=config.instructions,
            declarations=config.declarations,
            voice=config.voice,
            handle=self._handle,
            compression_trigger_tokens=self._compression_trigger_tokens,
        )
        self._out.append(dumps(message))

    # ------------------------------------------------------------ server messages

    def _on_setup_complete(self, body: dict[str, Any]) -> None:
        if not self._ready:
            self._ready = True
            session_id = wire.get(body, "sessionId")
            self._events.append(SessionReady(session_id if isinstance(session_id, str) else None))

    def _open_turn(self) -> _Turn:
        """The model turn content belongs to, started (and reported) on first content."""
        if self._turn is None:
            self._turn_seq += 1
            response_id = f"gemini-{self._connections}-{self._turn_seq}"
            swallow = self._discard > 0
            self._discard -= 1 if swallow else 0
            self._turn = _Turn(response_id, reported=not swallow, superseded=swallow)
            self._notes.restart()
            self._requested = False
            self._after_tool_call = False
            if not swallow:
                self._events.append(ResponseStarted(response_id))
        return self._turn

    def _on_server_content(self, content: dict[str, Any]) -> None:
        for key in content:
            if wire.snake(key) not in wire.CONTENT_USED:
                # groundingMetadata, interimInputTranscription…: not used, said once.
                self._unused(f"serverContent.{key}")
        self._on_input_transcription(wire.get_dict(content, "inputTranscription"))
        model_turn = wire.get_dict(content, "modelTurn")
        if model_turn is not None:
            for part in wire.get_list(model_turn, "parts"):
                self._on_part(part)
        output = wire.get_dict(content, "outputTranscription")
        text = wire.get(output, "text")
        if isinstance(text, str) and text:
            turn = self._open_turn()
            if not turn.superseded:
                self._events.append(TranscriptDelta(Role.ASSISTANT, turn.response_id, text))
                turn.said.append(text)
                self._notes.add_text(turn.response_id, text)
        if wire.get(content, "interrupted"):
            self._on_interrupted()
        if wire.get(content, "turnComplete"):
            if str(wire.get(content, "interactionStatus") or "").upper() == "IN_PROGRESS":
                # "More model output may follow": neither the answer nor the wait ends.
                self._log.debug("provider_turn_continues", status="IN_PROGRESS")
                if self._turn is None and not self._after_tool_call:
                    self._requested = True
                return
            self._on_turn_complete()

    def _unused(self, what: str) -> None:
        """Something the server sent that the device does not use: logged once per connection."""
        self._once(
            f"{what}@{self._connections}",
            "provider_content_unused",
            note="logged once per connection",
            field=what,
        )

    def _on_part(self, part: object) -> None:
        if not isinstance(part, dict) or wire.get(part, "thought"):
            return
        if wire.get(part, "text"):
            # An audio-only session should not get text parts; if one comes, the
            # words are not spoken (outputTranscription carries what is said).
            self._unused("serverContent.modelTurn.parts.text")
        blob = wire.get_dict(part, "inlineData")
        if blob is not None:
            turn = self._open_turn()
            if turn.superseded:
                self.dropped_audio_chunks += 1
                return
            pcm = wire.decode_b64(wire.get(blob, "data"), "serverContent.modelTurn inlineData")
            turn.had_audio = True
            self._notes.add_audio(turn.response_id, len(pcm))
            self._events.append(AudioChunk(turn.response_id, turn.response_id, pcm))

    def _on_input_transcription(self, transcription: dict[str, Any] | None) -> None:
        text = wire.get(transcription, "text")
        if not isinstance(text, str):
            return
        item_id = f"gemini-user-{self._user_item + 1}"
        if text:
            self._events.append(TranscriptDelta(Role.USER, item_id, text))
        if wire.get(transcription, "finished"):
            self._user_item += 1
            self._events.append(TranscriptDone(Role.USER, item_id, text))

    def _on_interrupted(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None:
            return
        if not turn.superseded:
            self._events.append(Interrupted(turn.response_id))
        self._end(turn, ResponseStatus.CANCELLED, "interrupted")

    def _on_turn_complete(self) -> None:
        turn, self._turn = self._turn, None
        if turn is not None:
            status = ResponseStatus.CANCELLED if turn.superseded else ResponseStatus.COMPLETED
            self._end(turn, status, "local_cut" if turn.superseded else None)
        elif self._discard > 0:
            self._discard -= 1  # the abandoned activity got an empty answer
        elif self._after_tool_call:
            self._after_tool_call = False  # the end of the turn that made the calls
        elif self._requested:
            # An empty answer: report it so the coordinator can ask again.
            self._end(self._open_turn(), ResponseStatus.COMPLETED, None)
            self._turn = None

    def _end(self, turn: _Turn, status: ResponseStatus, reason: str | None) -> None:
        """Report the turn's end: its final transcript first (what was said, also
        of a reply cut short), then ``ResponseDone``."""
        if turn.reported:
            if turn.said:
                text = "".join(turn.said)
                self._events.append(TranscriptDone(Role.ASSISTANT, turn.response_id, text))
            self._events.append(
                ResponseDone(turn.response_id, status, tuple(turn.calls), turn.had_audio, reason)
            )

    def _on_tool_call(self, body: dict[str, Any]) -> None:
        turn = self._open_turn()
        for index, call in enumerate(wire.get_list(body, "functionCalls")):
            if not isinstance(call, dict):
                raise ProviderProtocolError("toolCall.functionCalls: each call must be an object")
            name = wire.get(call, "name")
            if not isinstance(name, str):
                raise ProviderProtocolError("toolCall.functionCalls: a call has no name")
            call_id = wire.get(call, "id")
            if not isinstance(call_id, str):
                call_id = f"{turn.response_id}-call-{index}"
            args = wire.get(call, "args")
            arguments = json.dumps(args if args is not None else {}, separators=(",", ":"))
            self._unanswered[call_id] = name
            if turn.superseded:
                self._log.info("provider_call_of_cut_reply_answered", call_id=call_id, tool=name)
                self.send_tool_output(call_id, CANCELLED_OUTPUT)
                continue
            tool_call = ToolCall(turn.response_id, call_id, name, arguments)
            turn.calls.append(tool_call)
            self._events.append(tool_call)
        # The model now waits for the outputs: this response is over.
        self._turn = None
        self._after_tool_call = True
        status = ResponseStatus.CANCELLED if turn.superseded else ResponseStatus.COMPLETED
        self._end(turn, status, "local_cut" if turn.superseded else None)

    def _on_tool_call_cancellation(self, body: dict[str, Any]) -> None:
        for call_id in wire.get_list(body, "ids"):
            if isinstance(call_id, str) and self._unanswered.pop(call_id, None) is not None:
                self._cancelled_calls.add(call_id)
                self._log.info("provider_tool_call_cancelled", call_id=call_id)

    def _on_go_away(self, body: dict[str, Any]) -> None:
        time_left_s = wire.parse_duration_s(wire.get(body, "timeLeft"))
        self._time_left_s = time_left_s
        self._reconnect_reason = "go_away"
        self._go_away = True
        self._log.info(
            "provider_go_away", time_left_s=time_left_s, resumable=self._handle is not None
        )

    def _on_resumption_update(self, body: dict[str, Any]) -> None:
        handle = wire.get(body, "newHandle")
        if wire.get(body, "resumable") and isinstance(handle, str) and handle:
            self._handle = handle


_IGNORED_KEYS = frozenset({"usage_metadata", "voice_activity_detection_signal", "voice_activity"})
"""Top-level server keys the core understands and deliberately does nothing with."""
