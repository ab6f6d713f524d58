"""A household of speakers on one broker: announcements, receipts, the roster.

Layer: pure (no I/O). An announcement is one JSON message, never retained,
sent with an MQTT 5 message expiry of its time to live; it carries when it
was sent, so a speaker that receives it late (a broker that held it, a
speaker that was busy) drops it and says so instead of speaking it hours
later. The speaker that sent it hears back a :class:`Receipt` from each one
that got it (``queued``, then ``heard``; or ``dropped`` with why).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Literal

Outcome = Literal["queued", "heard", "dropped"]

CLOCK_SLACK_S = 5.0
"""Speakers' clocks may differ by this much before a fresh message looks old."""


class BadMessage(ValueError):
    """A household message that is not of our shape (logged and ignored)."""


@dataclass(frozen=True, slots=True)
class Announcement:
    id: str
    text: str
    from_device: str
    from_room: str
    sent_at: float
    """Wall-clock seconds (Unix time) when it was sent."""
    ttl_s: float

    @classmethod
    def new(cls, text: str, *, device: str, room: str, now: float, ttl_s: float) -> Announcement:
        return cls(uuid.uuid4().hex[:12], text, device, room, now, ttl_s)

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, payload: bytes) -> Announcement:
        raw = _object(payload)
        try:
            return cls(
                id=_str(raw, "id"),
                text=_str(raw, "text"),
                from_device=_str(raw, "from_device"),
                from_room=_str(raw, "from_room"),
                sent_at=_num(raw, "sent_at"),
                ttl_s=_num(raw, "ttl_s"),
            )
        except KeyError as exc:
            raise BadMessage(f"announcement without {exc}") from None

    def age_s(self, now: float) -> float:
        return now - self.sent_at

    def remaining_s(self, now: float) -> float:
        """Seconds left to speak it (≤ 0: too late, drop it)."""
        return self.ttl_s - max(self.age_s(now) - CLOCK_SLACK_S, 0.0)

    def prompt(self) -> str:
        """What the model is asked to say (the text verbatim, from the room it came from)."""
        return (
            f"An announcement for this household from the {self.from_room.replace('_', ' ')} "
            f"speaker. Say it now, word for word, and nothing else: {self.text}"
        )


@dataclass(frozen=True, slots=True)
class Receipt:
    id: str
    room: str
    device: str
    outcome: Outcome
    detail: str = ""

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, payload: bytes) -> Receipt:
        raw = _object(payload)
        outcome = raw.get("outcome")
        if outcome not in ("queued", "heard", "dropped"):
            raise BadMessage(f"receipt outcome {outcome!r}")
        try:
            return cls(
                _str(raw, "id"),
                _str(raw, "room"),
                _str(raw, "device"),
                outcome,
                str(raw.get("detail", "")),
            )
        except KeyError as exc:
            raise BadMessage(f"receipt without {exc}") from None

    def line(self) -> str:
        words = {"queued": "will be spoken", "heard": "spoken", "dropped": "dropped"}
        return f"{self.room}: {words[self.outcome]}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True, slots=True)
class Member:
    """Another speaker (or this one) as the roster knows it."""

    device: str
    room: str
    name: str
    online: bool = False


def roster_payload(room: str, name: str) -> bytes:
    return json.dumps({"room": room, "name": name}).encode()


def parse_roster(device: str, payload: bytes, online: bool) -> Member | None:
    """A roster entry; an empty payload (a speaker removed) is None."""
    if not payload:
        return None
    raw = _object(payload)
    try:
        return Member(device, _str(raw, "room"), str(raw.get("name", "")), online)
    except KeyError as exc:  # another speaker's roster entry: logged and skipped
        raise BadMessage(f"roster entry without {exc}") from None


def _object(payload: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadMessage(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BadMessage("not a JSON object")
    return raw


def _str(raw: dict[str, Any], key: str) -> str:
    value = raw[key]
    if not isinstance(value, str):
        raise BadMessage(f"{key!r} is not a string")
    return value


def _num(raw: dict[str, Any], key: str) -> float:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadMessage(f"{key!r} is not a number")
    return float(value)
