"""The simulator speaking xAI's dialect (served at ``/xai/v1/realtime``).

Layer: the sim's protocol behaviour. The events and their order are the
OpenAI GA ones (the reference: same names for audio, transcripts, tools),
so this reuses :class:`~huxleyd.sim.session.SimSession` and changes what
differs: ``session.created`` (flat) then ``conversation.created`` first, the flat session, structural
validation (:mod:`huxleyd.sim.xai_validate`), no truncate, and none of the
server events xAI does not send (``conversation.item.done`` …).
"""

from __future__ import annotations

import json
from typing import Any

from huxleyd.errors import ProviderProtocolError
from huxleyd.sim import wire
from huxleyd.sim.session import SimSession
from huxleyd.sim.validate import validate_server_event
from huxleyd.sim.xai_validate import validate_xai_client_event

NOT_SENT = frozenset(
    {
        "conversation.item.done",
        "rate_limits.updated",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.failed",
        "conversation.item.input_audio_transcription.segment",
    }
)
"""Server events of the GA protocol that xAI does not have."""

_OWN_SHAPE = frozenset({"session.created", "session.updated"})
"""Server events whose body differs from GA (checked structurally, not by the openai types)."""

_PCM = {"type": "audio/pcm", "rate": 24_000}


def default_session() -> dict[str, Any]:
    """A fresh xAI session: flat, server VAD on (as the real one starts)."""
    return {
        "instructions": "",
        "voice": "eve",
        "turn_detection": {"type": "server_vad", "threshold": 0.85, "prefix_padding_ms": 333},
        "audio": {"input": {"format": dict(_PCM)}, "output": {"format": dict(_PCM)}},
        "tools": [],
    }


class XaiOutbox(wire.Outbox):
    """GA-shaped events are checked against the openai types; the flat session by shape."""

    def encode(self, event: dict[str, Any]) -> str:
        if event["type"] not in _OWN_SHAPE:
            return super().encode(event)
        session = event.get("session")
        if not isinstance(session, dict) or "type" in session or "voice" not in session:
            raise ProviderProtocolError(f"sim built a bad xAI {event['type']}: {event!r}")
        stamped = {"event_id": f"event_sim_{next(self._ids)}", **event}
        return json.dumps(stamped, separators=(",", ":"))


class XaiSimSession(SimSession):
    """One connection in the xAI dialect."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session = default_session()
        self._outbox = XaiOutbox()

    async def start(self) -> None:
        # As xAI's server does since May 2026: session.created (the flat
        # session), then conversation.created.
        await self.emit({"type": "session.created", "session": self._session})
        conversation = {"id": "conv_sim_xai", "object": "realtime.conversation"}
        await self.emit({"type": "conversation.created", "conversation": conversation})

    async def emit(self, event: dict[str, Any]) -> None:
        if event["type"] not in NOT_SENT:
            await super().emit(event)

    def _validate(self, frame: str) -> tuple[Any, dict[str, Any]]:
        event = validate_xai_client_event(frame)
        return event, event

    def _voice(self) -> str:
        return str(self._session.get("voice") or "eve")

    async def _on_session_update(self, raw: dict[str, Any]) -> None:
        self._session = wire.merge(self._session, raw["session"])
        if "turn_detection" in raw["session"]:
            # Replaced, not merged: {"type": null} turns server VAD off entirely.
            self._session["turn_detection"] = raw["session"]["turn_detection"]
        await self.emit({"type": "session.updated", "session": self._session})

    async def _on_input_audio_buffer_commit(self, raw: dict[str, Any]) -> None:
        detection = self._session.get("turn_detection")
        if isinstance(detection, dict) and detection.get("type") is not None:
            self._record.violation(
                "input_audio_buffer.commit",
                "server VAD is on (session.turn_detection): push-to-talk sets its type to null",
            )
        await super()._on_input_audio_buffer_commit(raw)


_XAI_ONLY: dict[str, frozenset[str]] = {
    "ping": frozenset({"type"}),
    "response.text.delta": frozenset({"type", "response_id", "item_id", "delta"}),
    "response.text.done": frozenset({"type", "response_id", "item_id", "text"}),
}
"""Server events xAI has and GA does not, with the keys each must carry."""


def check_server_event(event: dict[str, Any]) -> None:
    """What a test may assert of a received xAI server event: GA shape, except the
    flat session and xAI's own events (checked by their required keys)."""
    kind = event["type"]
    required = _XAI_ONLY.get(kind)
    if required is not None:
        missing = sorted(required - set(event))
        if missing:
            raise ProviderProtocolError(f"xAI {kind} lacks {', '.join(missing)}")
        return
    if kind not in _OWN_SHAPE:
        validate_server_event(event)
