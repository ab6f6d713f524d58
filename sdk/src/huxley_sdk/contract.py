"""The Huxley skill contract: tools, results, side effects, enums, errors.

Names, defaults and semantics follow huxley-sdk 0.1.1, so a skill written
for Huxley runs on huxleyd unchanged; everything here is re-exported from
``huxley_sdk.types`` (Huxley's home for these names) and ``huxley_sdk``.
Nothing here imports ``huxleyd`` (the wall; tests/test_import_wall.py).

A skill returns a :class:`ToolResult`: ``output`` is text (conventionally
JSON) the model narrates; ``side_effect`` is at most one of
:class:`PlaySound`, :class:`AudioStream`, :class:`CancelMedia`,
:class:`SetVolume`, :class:`InputClaim`, or ``None``.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar


class ContentType(enum.Enum):
    """How long-form audio behaves when something more urgent needs the speaker."""

    MIXABLE = "mixable"
    """Music, radio: ducks (plays quieter) under speech."""
    NONMIXABLE = "nonmixable"
    """Books, podcasts: pauses, and resumes where it was."""


class ClaimEndReason(enum.Enum):
    """Why an :class:`InputClaim` ended; passed to ``on_claim_end``."""

    NATURAL = "natural"
    """The skill ended it (``ClaimHandle.cancel()``, or its speaker source ran out)."""
    USER_PTT = "user_ptt"
    """The user pressed the button: on a claim, the button means "hang up"."""
    PREEMPTED = "preempted"
    """A PREEMPT inject took the conversation."""
    ERROR = "error"
    """A claim callback raised."""


class InjectPriority(enum.Enum):
    """When a proactive turn (``ctx.inject_turn``) may speak."""

    NORMAL = "normal"
    """When idle; otherwise after the current turn ends without a content stream."""
    BLOCK_BEHIND_COMMS = "block_behind_comms"
    """Preempts content (a book pauses), but never a live claim: waits for it to end."""
    PREEMPT = "preempt"
    """Ends a live claim (PREEMPTED). Still waits while the user holds the button."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A function the model may call. ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_api_format(self) -> dict[str, Any]:
        """The realtime APIs' function tool shape."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }


@dataclass(frozen=True)
class SideEffect:
    """Base of the side effects. ``kind`` tags the concrete type.

    Frozen but not slotted: on Python 3.11 a slotted frozen subclass raises
    TypeError instead of FrozenInstanceError on assignment.
    """

    kind: ClassVar[str] = "none"


@dataclass(frozen=True)
class PlaySound(SideEffect):
    """A one-shot PCM16 24 kHz mono blob that plays before the model's narration."""

    kind: ClassVar[str] = "play_sound"
    pcm: bytes


@dataclass(frozen=True)
class AudioStream(SideEffect):
    """Long-form audio, started after the model finishes speaking.

    The framework calls ``factory()`` at the terminal barrier of the turn
    (never the skill) and plays the PCM16 24 kHz mono chunks it yields.
    Only the last stream of a turn runs. The iterator is closed when the
    stream is superseded, interrupted or stopped, so its ``finally`` runs:
    put bookmarks there.

    After a *natural* end, ``on_complete_prompt`` (an instruction to the
    model) starts a new response, and ``completion_silence_ms`` of silence
    is played *after* that request is sent, so the silence overlaps the
    model's first-token latency instead of adding to it.

    ``patience`` is how long a preempted stream may wait in the background
    before it is evicted (default: 0 for NONMIXABLE, 5 minutes for
    MIXABLE); ``on_patience_expired`` is awaited just before eviction.
    """

    kind: ClassVar[str] = "audio_stream"
    factory: Callable[[], AsyncIterator[bytes]]
    on_complete_prompt: str | None = None
    completion_silence_ms: int = 0
    content_type: ContentType = ContentType.NONMIXABLE
    label: str | None = None
    preroll_ms: int = 0
    on_patience_expired: Callable[[], Awaitable[None]] | None = None
    patience: timedelta | None = None


@dataclass(frozen=True)
class CancelMedia(SideEffect):
    """Stop the current AudioStream now, gracefully (as if it had finished)."""

    kind: ClassVar[str] = "cancel_media"


@dataclass(frozen=True)
class SetVolume(SideEffect):
    """Set the speaker volume, 0 (silent) to 100 (max). Acts when the tool returns."""

    kind: ClassVar[str] = "set_volume"
    level: int
    """Carried as given, like Huxley (whose skills clamp before building it):
    the runtime rounds and clamps to 0..100 when it applies the level, so a
    model's ``42.5`` or ``140`` never fails the tool call."""


@dataclass(frozen=True)
class SpeakVerbatim(SideEffect):
    """Have the assistant's voice read ``text`` exactly as written (a huxleyd
    extension beyond Huxley's five side effects).

    For answers produced elsewhere (a stronger text model, a document) that
    must not be paraphrased. The framework sends the tool output, does not
    ask the model to narrate it, clears speech still queued, and has the
    voice read ``text`` in a response outside the conversation with tools
    off. The tool's ``output`` should tell the model the answer was
    delivered, so it does not speak again.
    """

    kind: ClassVar[str] = "speak_verbatim"
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("SpeakVerbatim.text must be a non-empty string")


@dataclass(frozen=True)
class InputClaim(SideEffect):
    """Take over the microphone (and optionally the speaker).

    While the claim lasts, mic frames (PCM16 24 kHz mono) go to
    ``on_mic_frame`` instead of the model, ``speaker_source`` plays on the
    speaker, and the button means "hang up". ``on_claim_end`` receives the
    :class:`ClaimEndReason`. Returned from a tool, the claim starts at the
    end of the turn; ``ctx.start_input_claim`` starts it at once.
    """

    kind: ClassVar[str] = "input_claim"
    on_mic_frame: Callable[[bytes], Awaitable[None]]
    speaker_source: AsyncIterator[bytes] | None = None
    on_claim_end: Callable[[ClaimEndReason], Awaitable[None]] | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns: text for the model, and at most one side effect."""

    output: str
    side_effect: SideEffect | None = None


class ClaimBusyError(RuntimeError):
    """Another input claim is active; only one at a time."""


class InvalidTransitionError(Exception):
    """A state machine was asked for a transition it does not allow."""


@dataclass(frozen=True, slots=True)
class PermanentFailure:
    """What ``on_permanent_failure`` receives when a background task is down for good.

    The exception is carried as strings (class name and message) so the
    record stays hashable and loggable. ``elapsed_in_window_s`` counts from
    the start of the current restart-budget window, not from the first crash.
    """

    name: str
    last_exception_class: str
    last_exception_message: str
    restart_count: int
    elapsed_in_window_s: float


class StopRetrying(Exception):
    """Raise from a background task to stop it now, without restarts.

    A huxleyd extension: Huxley has no way for a task to say "do not
    restart me". ``on_permanent_failure`` still runs, with this exception
    in its :class:`PermanentFailure` record.
    """
