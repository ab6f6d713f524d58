"""What the cascade keeps about one response, its replies and its tool calls.

Layer: plain data for :mod:`.provider` (no I/O).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from huxleyd.providers.cascade.history import SpokenLog
from huxleyd.providers.events import ProviderErrorEvent, ResponseDone, ResponseStatus, ToolCall

MIN_COMMIT_MS = 100
"""Less push-to-talk audio than this is refused, as OpenAI refuses it."""


@dataclass(slots=True)
class Item:
    """One model reply (one assistant message), voiced as one audio item."""

    item_id: str
    log: SpokenLog = field(default_factory=SpokenLog)
    code_source: str | None = None
    """Code prompt: the call this reply made, kept in the history after a cut."""
    native_calls: tuple[tuple[str, str, str], ...] = ()
    truncated: bool = False


@dataclass(slots=True, eq=False)
class Response:
    """One requested response: its task, its current reply, what it reported."""

    response_id: str
    out_of_band: bool
    instructions: str | None
    task: asyncio.Task[None] | None = None
    verbatim: str | None = None
    """SpeakVerbatim: speak exactly this, without asking the model."""
    started: bool = False
    item: Item | None = None
    had_audio: bool = False
    cancelled: bool = False
    calls: list[ToolCall] = field(default_factory=list)

    def done(self, status: ResponseStatus, *, reason: str | None = None) -> ResponseDone:
        """The ``ResponseDone`` of a run that finished or failed: its calls and audio."""
        return ResponseDone(
            self.response_id,
            status,
            tool_calls=tuple(self.calls),
            had_audio=self.had_audio,
            reason=reason,
            out_of_band=self.out_of_band,
        )


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A reported tool call waiting for its output; ``notes``: refused extra calls."""

    name: str
    source: str
    native: bool
    notes: str = ""


class StageFailed(Exception):
    """A stage failed; the provider ends the response with ``ResponseDone(FAILED, reason)``.

    Internal control flow, caught in the provider; stage adapters raise
    :class:`~huxleyd.errors.ProviderError`.
    """

    def __init__(self, reason: str, detail: str, *, unreachable: bool = False) -> None:
        super().__init__(detail)
        self.reason = reason
        self.unreachable = unreachable


def commit_empty(heard_ms: float | None) -> ProviderErrorEvent:
    """OpenAI's error for a too-short commit; the coordinator answers it with "too short"."""
    message = (
        "nothing was heard in the recording"
        if heard_ms is None
        else f"buffer too small: expected at least {MIN_COMMIT_MS} ms of audio, got {heard_ms:.0f} ms"
    )
    return ProviderErrorEvent("input_audio_buffer_commit_empty", message, recoverable=True)
