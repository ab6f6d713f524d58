"""Provider-neutral events: what a provider core reports to the coordinator.

Layer: pure data. Every provider core (OpenAI, later xAI and Gemini) turns
its wire events into these, so the coordinator never learns which provider
it talks to. Audio is PCM16 little-endian mono at the provider's
``Capabilities.output_rate_hz`` (24 kHz for every provider so far).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Role(enum.StrEnum):
    """Who spoke a transcript."""

    USER = "user"
    ASSISTANT = "assistant"


class ResponseStatus(enum.StrEnum):
    """How a response ended."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"
    """Cancelled by us (``cancel_response``) or cut by the provider (barge-in)."""
    FAILED = "failed"
    """The provider failed it, or the connection was lost while it ran."""
    INCOMPLETE = "incomplete"
    """Stopped early by the provider (token limit, content filter)."""


@dataclass(frozen=True, slots=True)
class SessionReady:
    """The provider accepted the configuration; turns may start.

    Sent once per connection, after the first configuration was applied
    (OpenAI: the ``session.updated`` answering our first ``session.update``).
    The transport uses it as the sign of a healthy session.
    """

    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """Model speech: ``pcm`` is PCM16 LE mono at the output rate."""

    response_id: str
    item_id: str
    pcm: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class TranscriptDelta:
    """A piece of a transcript (user speech as heard, assistant speech as said)."""

    role: Role
    item_id: str
    text: str


@dataclass(frozen=True, slots=True)
class TranscriptDone:
    """The final transcript of one item."""

    role: Role
    item_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model calls a tool. Every call needs ``send_tool_output(call_id, …)``."""

    response_id: str
    call_id: str
    name: str
    arguments_json: str
    """The arguments exactly as the model wrote them: JSON text, not yet validated."""


@dataclass(frozen=True, slots=True)
class ResponseStarted:
    """The provider started a response (OpenAI: ``response.created``)."""

    response_id: str
    out_of_band: bool = False
    """True for a response outside the default conversation (may run in parallel)."""


@dataclass(frozen=True, slots=True)
class ResponseDone:
    """A response ended; ``tool_calls`` are all the calls it made, in order."""

    response_id: str
    status: ResponseStatus
    tool_calls: tuple[ToolCall, ...] = ()
    had_audio: bool = False
    reason: str | None = None
    """Why it ended early: ``client_cancelled``, ``turn_detected``,
    ``max_output_tokens``, ``content_filter``, ``connection_lost``, an error code."""
    out_of_band: bool = False


PROTOCOL_ERROR = "protocol_error"
"""The code of the :class:`ProviderErrorEvent` a core reports for a frame it
could not understand (the core logs ``provider_protocol_error`` itself)."""


@dataclass(frozen=True, slots=True)
class ProviderErrorEvent:
    """The provider reported an error, or sent a frame we could not understand.

    ``recoverable`` errors leave the session usable (the turn may be lost);
    an unrecoverable one makes the transport reconnect.
    """

    code: str
    message: str
    recoverable: bool
    client_event_id: str | None = None
    """The ``event_id`` of our frame the error refers to, when the provider says."""


@dataclass(frozen=True, slots=True)
class InputCommitted:
    """The user's audio was committed into the conversation as ``item_id``."""

    item_id: str


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The provider cut the assistant's reply itself (server VAD, Gemini ``interrupted``)."""

    response_id: str | None = None


@dataclass(frozen=True, slots=True)
class ItemTruncated:
    """The provider confirmed a truncate: the item now ends at ``audio_end_ms``."""

    item_id: str
    audio_end_ms: int


Event = (
    SessionReady
    | AudioChunk
    | TranscriptDelta
    | TranscriptDone
    | ToolCall
    | ResponseStarted
    | ResponseDone
    | ProviderErrorEvent
    | InputCommitted
    | Interrupted
    | ItemTruncated
)
"""Everything a provider core can report."""
