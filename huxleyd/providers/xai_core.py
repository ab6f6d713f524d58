"""The sans-I/O xAI voice agent core (the OpenAI-like dialect, see :mod:`xai_wire`).

Layer: pure protocol logic, no asyncio, no sockets; the transport drives it
exactly like the OpenAI core. It is the shared OpenAI dialect
(:mod:`~huxleyd.providers.openai_dialect`) with these differences:

- the first server events are ``session.created`` then ``conversation.created``
  (older servers sent only the latter; either one opens the session); the session is flat
  (:mod:`xai_wire`); the text stream is ``response.text.*`` or
  ``response.output_text.*`` (both are handled);
- no out-of-band responses and no response metadata (logged once, ignored);
- barge-in is a *local cut* (``LOCAL_CUT_ASYNC_CONFIRMATION``).

xAI has no ``conversation.item.truncate`` and we do not rely on
``response.cancel``, so the coordinator silences the speaker and logs what
was heard; the provider's response runs on to its natural end. To keep that
invisible, this core *supersedes* the running response whenever the user
takes the floor (``start_turn``, ``send_user_text``, a new
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

from collections.abc import Mapping
from typing import Any

from huxleyd.logs import EventLogger, get_logger
from huxleyd.pcm import RATE_HZ
from huxleyd.providers import openai_wire as wire
from huxleyd.providers import xai_wire
from huxleyd.providers.base import Capabilities, InterruptAcceptance

# CANCELLED_OUTPUT is re-exported: callers have always found it here.
from huxleyd.providers.core import CANCELLED_OUTPUT as CANCELLED_OUTPUT
from huxleyd.providers.core import CutReplyNotes, check_audio_end_ms
from huxleyd.providers.events import ResponseStatus
from huxleyd.providers.openai_dialect import OpenAIDialectCore, TrackedResponse

XAI_CAPABILITIES = Capabilities(
    text_input=True,
    mid_session_instructions=True,
    mid_session_tools=True,
    response_cancel=False,
    truncate=False,
    interrupt_acceptance=InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION,
    input_rate_hz=RATE_HZ,
    output_rate_hz=RATE_HZ,
)


class XaiRealtimeCore(OpenAIDialectCore):
    """xAI voice agent, push-to-talk (``turn_detection: null``), PCM16 24 kHz."""

    capabilities = XAI_CAPABILITIES
    _ignored_events = xai_wire.IGNORED_EVENTS

    def __init__(self, *, logger: EventLogger | None = None) -> None:
        super().__init__(logger=logger or get_logger("huxleyd.providers.xai"))
        self._handlers.update(
            {
                "session.created": self._on_session_created,
                "conversation.created": self._on_conversation_created,
                # xAI documents its text stream under both names (the beta
                # ``response.text.*`` and the GA ``response.output_text.*``) as
                # the same thing; whichever comes, the words are kept.
                "response.text.delta": self._on_assistant_delta,
                "response.text.done": self._on_assistant_done,
                "response.output_text.delta": self._on_assistant_delta,
                "response.output_text.done": self._on_assistant_done,
            }
        )
        self._deferred: dict[str, Any] | None = None
        """A response.create held back until the running response ends."""
        self._notes = CutReplyNotes(output_rate_hz=RATE_HZ, logger=self._log)

    def connection_lost(self) -> None:
        """Every reported response ends FAILED (``connection_lost``); a held create is dropped."""
        self._deferred = None
        super().connection_lost()

    def _reset_connection(self) -> None:
        super()._reset_connection()
        self._deferred = None
        self._notes.reset()

    @property
    def response_active(self) -> bool:
        return super().response_active or self._deferred is not None

    # ------------------------------------------------------------ commands

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
        """No truncate in xAI: the reply stays whole in its history, so a short
        context note before the user's next turn says what was really heard."""
        check_audio_end_ms(audio_end_ms)
        super().truncate(item_id, audio_end_ms)
        self._notes.cut(item_id, audio_end_ms)

    def _user_takes_floor(self, why: str) -> None:
        self._supersede_running(why)
        note = self._notes.take()
        if note is not None:
            item = {
                "type": "message",
                "role": "system",
                "content": [{"type": "input_text", "text": note}],
            }
            self._send({"type": "conversation.item.create", "item": item})

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

    def _full_session(self, config: wire.SessionConfig) -> dict[str, Any]:
        return xai_wire.full_session(config)

    def _changed_session(
        self, config: wire.SessionConfig, changed: Mapping[str, bool]
    ) -> dict[str, Any] | None:
        return xai_wire.changed_session(config, changed)

    # ------------------------------------------------------------ events

    def _on_session_created(self, event: dict[str, Any]) -> None:
        self._ready_as_created(wire.require_dict(event, "session"))

    def _on_conversation_created(self, event: dict[str, Any]) -> None:
        self._ready_as_created(wire.require_dict(event, "conversation"))

    def _live(self, response_id: str) -> bool:
        """Only a known response the user has not superseded is still wanted."""
        response = self._responses.get(response_id)
        return response is not None and not response.superseded

    def _on_audio_delta(self, event: dict[str, Any]) -> None:
        response_id, item_id = event.get("response_id"), event.get("item_id")
        delta = event.get("delta")
        if isinstance(item_id, str) and isinstance(delta, str) and self._live(str(response_id)):
            self._notes.add_audio(item_id, len(delta) * 3 // 4)
        super()._on_audio_delta(event)

    def _on_assistant_delta(self, event: dict[str, Any]) -> None:
        response_id, item_id = event.get("response_id"), event.get("item_id")
        delta = event.get("delta")
        if isinstance(item_id, str) and isinstance(delta, str) and self._live(str(response_id)):
            self._notes.add_text(item_id, delta)
        super()._on_assistant_delta(event)

    def _response_started(self, response: TrackedResponse) -> None:
        self._notes.restart()

    def _on_assistant_done(self, event: dict[str, Any]) -> None:
        if self._live(wire.require_str(event, "response_id")):
            super()._on_assistant_done(event)

    def _report_call(self, response_id: str, call_id: str, name: str, arguments: str) -> None:
        response = self._responses.get(response_id)
        if response is None or not response.superseded or call_id in self._reported_calls:
            super()._report_call(response_id, call_id, name, arguments)
            return
        # Nobody wants this reply any more, but the call still needs an output.
        self._reported_calls.add(call_id)
        self._log.info("provider_call_of_cut_reply_answered", call_id=call_id, tool=name)
        self.send_tool_output(call_id, CANCELLED_OUTPUT)

    def _final_status(
        self, response: TrackedResponse, body: dict[str, Any]
    ) -> tuple[ResponseStatus, str | None]:
        status, reason = super()._final_status(response, body)
        if response.superseded:
            return ResponseStatus.CANCELLED, reason or "local_cut"
        return status, reason

    def _response_slot_freed(self) -> None:
        if self._deferred is not None and not self._responses and not self._pending:
            event, self._deferred = self._deferred, None
            self._send_create(event)
