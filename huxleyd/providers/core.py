"""The plumbing every sans-I/O provider core shares.

Layer: pure protocol logic, no asyncio, no sockets. :func:`dumps` and
:func:`parse_json_object` are how every JSON frame goes out and comes in (a
frame that is not a JSON object is a protocol error quoting its start).
:class:`SansIOCore` owns
the two queues the transport drains (frames to send, events understood), the
"log it once" memory, and the rule that ``receive`` never raises: a frame the
core cannot understand is counted, logged and reported as a recoverable
:class:`~huxleyd.providers.events.ProviderErrorEvent`. A core subclasses it
and implements :meth:`SansIOCore._receive_frame`; what a dialect means by a
frame stays in its own module.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Protocol

from huxleyd.errors import ProviderProtocolError
from huxleyd.logs import EventLogger
from huxleyd.pcm import bytes_to_ms
from huxleyd.providers.base import RealtimeCore
from huxleyd.providers.closes import CloseVerdict
from huxleyd.providers.events import PROTOCOL_ERROR, Event, ProviderErrorEvent

CANCELLED_OUTPUT = '{"cancelled": true, "reason": "the user interrupted the reply"}'
"""The output a core sends by itself for a call of a reply the user cut off
(local-cut dialects): every call needs an output, and nobody else will give it."""


ONCE_TAGS_MAX = 32
"""At most this many distinct things are "logged once" per core; past that
they are only counted (:attr:`SansIOCore.unlogged_notes`): a server that
sends a new unknown event type in every frame must not flood the journal
or grow a set without bound."""


def dumps(message: Mapping[str, Any]) -> str:
    """Compact JSON, the way every frame goes out."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def parse_json_object(frame: str | bytes) -> dict[str, Any]:
    """One received frame (text or binary) as a JSON object; a protocol error otherwise."""
    try:
        message = json.loads(frame)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProviderProtocolError(f"frame is not JSON ({exc}): {excerpt(frame)}") from exc
    if not isinstance(message, dict):
        raise ProviderProtocolError(f"frame is not a JSON object: {excerpt(frame)}")
    return message


def excerpt(frame: str | bytes, limit: int = 120) -> str:
    """The start of a frame, quoted, for an error message."""
    text = frame if isinstance(frame, str) else frame[:limit].decode("utf-8", "replace")
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def check_pcm16(pcm: bytes) -> None:
    """PCM16 is two bytes a sample: an odd byte count is a programming error."""
    if len(pcm) % 2:
        raise ValueError(f"PCM16 audio must have an even byte count, got {len(pcm)}")


def check_audio_end_ms(audio_end_ms: int) -> None:
    """A heard length is never negative."""
    if audio_end_ms < 0:
        raise ValueError(f"audio_end_ms must be >= 0, got {audio_end_ms}")


class ConnectionCore(RealtimeCore, Protocol):
    """A core as the transport drives it: the protocol, plus what a provider may
    offer around the socket. Every member is declared on every core
    (:class:`SansIOCore` says "nothing offered"; a core that offers one
    overrides it), so the transport calls them and never probes a core's type.
    """

    unlogged_notes: int

    def connection_closed(self, code: int | None, reason: str) -> None:
        """The close frame, before ``connection_lost`` (1006: none came; None: the
        socket was left without a close handshake). Gemini reports errors so."""

    @property
    def reconnect_wanted(self) -> str | None:
        """Why the core wants a fresh connection now (Gemini's ``goAway``), else None.

        Read after every received frame and every command; a reason means
        "reconnect now, without backoff". Said only when idle, and no longer
        once the next connection opened."""

    def take_time_left_s(self) -> float | None:
        """Seconds the server said the connection has left, in the frame just
        received; once, else None."""

    def close_verdict(self, code: int | None, reason: str, *, ready: bool) -> CloseVerdict | None:
        """What the provider meant by ending the session (:mod:`huxleyd.providers.closes`);
        None: no opinion (the transport's generic reading). ``ready``: the session
        had become ready on this connection."""


class SansIOCore(ABC):
    """Frames out, events out, bad frames reported: the shared half of a core.

    Subclasses append to ``self._out`` (frames, in send order) and
    ``self._events`` (events, oldest first) and implement
    :meth:`_receive_frame`. While it runs they may set ``self._frame_type``
    to what the frame says it is; a protocol error then names it.

    The members of :class:`ConnectionCore` beyond the protocol default to
    "nothing offered" here; a core overrides the ones its provider has.
    """

    def __init__(self, *, logger: EventLogger) -> None:
        self._log = logger
        self._out: list[str | bytes] = []
        self._events: list[Event] = []
        self._logged_once: set[str] = set()
        self._frame_type: str | None = None
        self.dropped_audio_chunks = 0
        """Audio the user no longer wants (cut, cancelled or superseded replies), not reported."""
        self.protocol_errors = 0
        """Frames we could not understand (each logged and reported)."""
        self.unlogged_notes = 0
        """"Logged once" notes (an unknown event type…) past :data:`ONCE_TAGS_MAX`
        distinct ones: counted, not logged (``huxleyctl status`` shows the count)."""

    def events_received(self) -> list[Event]:
        """Events understood since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def connection_closed(self, code: int | None, reason: str) -> None:
        return None

    @property
    def reconnect_wanted(self) -> str | None:
        return None

    def take_time_left_s(self) -> float | None:
        return None

    def close_verdict(self, code: int | None, reason: str, *, ready: bool) -> CloseVerdict | None:
        return None

    def messages_to_send(self) -> list[str | bytes]:
        """Frames to send since the last call, in order."""
        out, self._out = self._out, []
        return out

    def receive(self, frame: str | bytes) -> None:
        """Feed one received frame; never raises (bad frames are logged and reported)."""
        self._frame_type = None
        try:
            self._receive_frame(frame)
        except ProviderProtocolError as exc:
            self._protocol_error(str(exc))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            where = f"{self._frame_type}: " if self._frame_type is not None else ""
            self._protocol_error(f"{where}{type(exc).__name__}: {exc}")

    @abstractmethod
    def _receive_frame(self, frame: str | bytes) -> None:
        """Parse one frame and act on it; raise ProviderProtocolError (or a
        KeyError/TypeError/ValueError/AttributeError) when it makes no sense."""

    def _once(self, tag: str, event: str, *, note: str = "logged once", **fields: Any) -> None:
        """Log ``event`` the first time ``tag`` is seen in this core's life only.

        The memory is bounded: once :data:`ONCE_TAGS_MAX` tags were logged,
        a new one is counted in ``unlogged_notes`` instead; the line that
        fills the set says so, so the journal tells where the count starts.
        """
        if tag in self._logged_once:
            return
        if len(self._logged_once) >= ONCE_TAGS_MAX:
            self.unlogged_notes += 1
            return
        self._logged_once.add(tag)
        if len(self._logged_once) == ONCE_TAGS_MAX:
            note += "; the last such note: further new ones are only counted (status)"
        self._log.info(event, note=note, **fields)

    def _protocol_error(self, message: str) -> None:
        self.protocol_errors += 1
        where = {"type": self._frame_type} if self._frame_type is not None else {}
        self._log.warning("provider_protocol_error", **where, problem=message)
        self._events.append(ProviderErrorEvent(PROTOCOL_ERROR, message, recoverable=True))


def heard_note(heard_ms: int, transcript: str, received_ms: float) -> str:
    """What the user heard of a reply they cut off, as a context note for the model.

    For providers without truncate (xAI, Gemini) the conversation keeps the
    whole reply; this note, added before the user's next turn, says how much
    of it was heard. The heard words are estimated from the share of the
    reply's audio that played (``heard_ms`` of ``received_ms``).
    """
    words = transcript.split()
    share = min(1.0, heard_ms / received_ms) if received_ms > 0 else 0.0
    heard = " ".join(words[: round(len(words) * share)])
    said = f' They heard only: "{heard}…".' if heard else ""
    return (
        f"(Context, not a request: the user interrupted your last reply after "
        f"{heard_ms / 1000:.1f} s.{said} They did not hear the rest of it.)"
    )


class CutReplyNotes:
    """What the running reply said and sent, and the note a cut leaves behind.

    For the dialects without truncate (xAI, Gemini): the reply stays whole in
    the provider's history, so when the user cuts it :meth:`cut` turns the
    heard length into a :func:`heard_note`, and the core sends it before the
    user's next turn (:meth:`take`). Only the running reply can be cut, so a
    new reply (:meth:`restart`) forgets the last one's text and audio.
    """

    def __init__(self, *, output_rate_hz: int, logger: EventLogger) -> None:
        self._rate_hz = output_rate_hz
        self._log = logger
        self._spoken: dict[str, tuple[list[str], int]] = {}
        """Per item of the running reply: transcript pieces and PCM bytes received."""
        self._note: str | None = None

    def restart(self) -> None:
        """A new reply runs: the last one can no longer be cut."""
        self._spoken.clear()

    def reset(self) -> None:
        """A new connection: nothing spoken, nothing to tell."""
        self._spoken.clear()
        self._note = None

    def add_text(self, item_id: str, text: str) -> None:
        pieces, received = self._spoken.get(item_id, ([], 0))
        self._spoken[item_id] = ([*pieces, text], received)

    def add_audio(self, item_id: str, pcm_bytes: int) -> None:
        pieces, received = self._spoken.get(item_id, ([], 0))
        self._spoken[item_id] = (pieces, received + pcm_bytes)

    def cut(self, item_id: str, heard_ms: int) -> None:
        """The user heard ``heard_ms`` of ``item_id``: queue the note that says so."""
        check_audio_end_ms(heard_ms)
        pieces, received = self._spoken.get(item_id, ([], 0))
        self._note = heard_note(heard_ms, "".join(pieces), bytes_to_ms(received, self._rate_hz))
        self._log.info("provider_heard_note_queued", item=item_id, heard_ms=heard_ms)

    def take(self) -> str | None:
        """The queued note, once (None when no reply was cut since the last one)."""
        note, self._note = self._note, None
        return note
