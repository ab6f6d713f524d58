"""The sans-I/O OpenAI Realtime (GA) core.

Layer: pure protocol logic. No asyncio, no sockets: the transport feeds
received frames to :meth:`OpenAIRealtimeCore.receive` and sends what
:meth:`~OpenAIRealtimeCore.messages_to_send` hands out. The coordinator
gives commands (:class:`~huxleyd.providers.base.ProviderCommands`) and reads
provider-neutral events.

What it tracks, per connection: the in-conversation response that is active
(requested → ``response.created`` → ``response.done``), out-of-band responses,
the assistant items and function calls of each response, the calls still
waiting for an output, and which responses/items were cancelled or truncated
(their late audio is dropped here, counted in ``dropped_audio_chunks``).
Instructions, tools and voice are re-sent only when their hash changed, and
in full after every (re)connect.

The event handling it shares with the xAI core lives in
:mod:`~huxleyd.providers.openai_dialect`; this module adds what only OpenAI
has: the GA session shape with input transcription, out-of-band responses
and response metadata, the verbatim reader, ``response.cancel``,
``conversation.item.truncate``, and the events that go with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from huxleyd.logs import EventLogger, get_logger
from huxleyd.pcm import RATE_HZ
from huxleyd.providers import openai_wire as wire
from huxleyd.providers.base import Capabilities, InterruptAcceptance
from huxleyd.providers.events import ItemTruncated, Role, TranscriptDelta
from huxleyd.providers.openai_dialect import OpenAIDialectCore

OPENAI_CAPABILITIES = Capabilities(
    text_input=True,
    mid_session_instructions=True,
    mid_session_tools=True,
    response_cancel=True,
    truncate=True,
    interrupt_acceptance=InterruptAcceptance.IMMEDIATE_PROVIDER_ACK,
    input_rate_hz=RATE_HZ,
    output_rate_hz=RATE_HZ,
    verbatim_reader=True,
)

REQUEST_TAG_KEY = "huxleyd_request"
"""The ``metadata`` key that marks each of our ``response.create`` (echoed in the
response body): it says which request a response answers, so whether it is out
of band is known from what we sent, not from an optional field of the reply."""

READER_INSTRUCTIONS = (
    "Read the user's text aloud exactly as written, word for word. Do not add, "
    "drop, explain or comment on anything."
)


class OpenAIRealtimeCore(OpenAIDialectCore):
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
        self._handlers.update(
            {
                "session.created": self._on_session_created,
                "conversation.item.done": self._on_item_done,
                "conversation.item.truncated": self._on_truncated,
                "conversation.item.input_audio_transcription.delta": self._on_user_delta,
                "conversation.item.input_audio_transcription.failed": self._on_user_failed,
                "response.output_text.delta": self._on_assistant_delta,
                "response.output_text.done": self._on_assistant_done,
            }
        )
        self._tags = 0

    # ------------------------------------------------------------ commands

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
        self._send_create(event, out_of_band=out_of_band)

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
        self._send_create({"type": "response.create", "response": params}, out_of_band=True)

    def cancel_response(self) -> bool:
        """Cancel every running response; True when a ``response.cancel`` was sent."""
        sent = False
        for response in self._responses.values():
            if not response.superseded:
                response.superseded = True
                self._send({"type": "response.cancel", "response_id": response.response_id})
                sent = True
        waiting = [c for c in self._pending if not c.out_of_band and not c.cancelled]
        if not sent and waiting:
            # Requested but not started: the server handles our frames in order,
            # so by the time it reads this cancel that response exists. The mark
            # sits on those creates: if the server refuses one, the mark goes
            # with it and cannot mute a later, wanted response.
            for create in waiting:
                create.cancelled = True
            self._send({"type": "response.cancel"})
            sent = True
        return sent

    def truncate(self, item_id: str, audio_end_ms: int) -> None:
        """The local record (later audio of the item is dropped), and the server told."""
        super().truncate(item_id, audio_end_ms)
        self._send(
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": int(audio_end_ms),
            }
        )

    def _full_session(self, config: wire.SessionConfig) -> dict[str, Any]:
        return wire.full_session(config, transcription_model=self._transcription_model)

    # ------------------------------------------------------------ events only OpenAI sends

    def _on_session_created(self, event: dict[str, Any]) -> None:
        self._ready_as_created(wire.require_dict(event, "session"))

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

    def _on_user_failed(self, event: dict[str, Any]) -> None:
        error = event.get("error") if isinstance(event.get("error"), dict) else None
        self._log.info(
            "provider_transcription_failed",
            item=wire.optional_str(event, "item_id"),
            problem=wire.optional_str(error, "message"),
        )

    def _send_create(
        self, event: dict[str, Any], *, out_of_band: bool = False, tag: str | None = None
    ) -> None:
        """Every create carries our tag in ``metadata`` (merged with the caller's)."""
        self._tags += 1
        tag = tag or f"r{self._tags}"
        params = event.setdefault("response", {})
        params["metadata"] = {**params.get("metadata", {}), REQUEST_TAG_KEY: tag}
        super()._send_create(event, out_of_band=out_of_band, tag=tag)

    def _request_tag(self, body: dict[str, Any]) -> str | None:
        metadata = body.get("metadata")
        return wire.optional_str(metadata, REQUEST_TAG_KEY) if isinstance(metadata, dict) else None
