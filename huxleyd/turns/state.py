"""The turn coordinator's vocabulary: states, inputs, and the per-turn record."""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field


class TurnState(enum.Enum):
    """Where the conversation stands (the LEDs follow this).

    ``IDLE`` → press → ``LISTENING`` → release → ``COMMITTING`` (commit and
    response requested) → ``IN_RESPONSE`` (the model answers) → with tool
    calls: ``AWAITING_NEXT_RESPONSE`` (outputs sent, follow-up requested) →
    ``IN_RESPONSE`` … → ``APPLYING_SIDE_EFFECTS`` (the terminal barrier: the
    last speech plays out, then a latched stream or claim starts) → ``IDLE``.
    A press during a reply → ``INTERRUPTED`` (cut, cancel, truncate) → ``LISTENING``.
    """

    IDLE = "idle"
    LISTENING = "listening"
    COMMITTING = "committing"
    IN_RESPONSE = "in_response"
    AWAITING_NEXT_RESPONSE = "awaiting_next_response"
    APPLYING_SIDE_EFFECTS = "applying_side_effects"
    INTERRUPTED = "interrupted"

    @property
    def replying(self) -> bool:
        """The model owes or is giving an answer."""
        return self in (
            TurnState.COMMITTING,
            TurnState.IN_RESPONSE,
            TurnState.AWAITING_NEXT_RESPONSE,
            TurnState.APPLYING_SIDE_EFFECTS,
        )


class TurnOutcome(enum.Enum):
    """How a turn ended, for the journal."""

    ANSWERED = "answered"
    TOO_SHORT = "too_short"
    INTERRUPTED = "interrupted"
    SILENT = "silent"
    """The model gave no audio or tool call after the retries."""
    FAILED = "failed"
    """A provider error or a lost connection ended it."""
    MUTED = "muted"
    """The microphone was muted while it listened (a long silent hold, ``huxleyctl mute``)."""


class TurnSource(enum.StrEnum):
    """What started a turn. A ``StrEnum``: the value is the journal's
    ``HUXLEY_SOURCE`` (``turn_done source=ptt``), the ``watch`` feed's
    ``source`` and ``huxleyctl status``'s text, unchanged."""

    PTT = "ptt"
    """The push-to-talk button."""
    TEXT = "text"
    """``huxleyctl say``."""
    INJECT = "inject"
    """A skill's proactive announcement (``ctx.inject_turn``)."""
    MEDIA = "media"
    """A stream ended with a completion prompt."""
    WAKE = "wake"
    """The wake word (``[wake]``): ends by the local end-of-speech detector."""


class CutBy(enum.StrEnum):
    """What cut a reply short; the value is the journal's ``by`` of ``barge_in`` and
    the words ``huxleyctl watch`` shows ("the answer was cut by the button")."""

    BUTTON = "the button"
    """A press while it answered (barge-in)."""
    WAKE = "the wake word"
    """The wake word heard while it answered (voice barge-in)."""
    SAY = "a typed say (huxleyctl say)"
    """A text turn that supersedes the reply."""
    CALL = "a call that took the microphone"
    """A skill's input claim (an intercom call)."""
    VERBATIM = "a tool's answer read out instead"
    """A tool asked for its output verbatim: the narration still queued is dropped."""


_turn_ids = itertools.count(1)


@dataclass(slots=True)
class TurnRecord:
    """What one turn did and how long each step took (journald, ``huxleyctl status``).

    Times are the coordinator clock's monotonic seconds; ``timings_ms``
    turns them into the named intervals of docs/conventions.md.
    """

    turn_id: str = field(default_factory=lambda: f"t{next(_turn_ids)}")
    source: TurnSource = TurnSource.PTT
    pressed_at: float | None = None
    first_frame_sent_at: float | None = None
    released_at: float | None = None
    committed_at: float | None = None
    first_audio_at: float | None = None
    """The reply's first audio chunk arrived from the provider."""
    first_played_at: float | None = None
    """The reply's first sample reached the speaker (the speech source's played
    position, from the engine's playout clock; not the hand-off to the ring)."""
    audio_sent_ms: float = 0.0
    tools: list[str] = field(default_factory=list)
    retries: int = 0
    outcome: TurnOutcome | None = None
    inject_id: str | None = None
    """The proactive announcement this turn speaks, if it is one."""

    def timings_ms(self) -> dict[str, float]:
        def span(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else round((b - a) * 1000.0, 1)

        # first_audio_to_playing_ms: delta received -> first sample at the DAC
        # (the budget row in docs/conventions.md); the journald field name is kept.
        pairs = {
            "press_to_first_frame_ms": span(self.pressed_at, self.first_frame_sent_at),
            "release_to_commit_ms": span(self.released_at, self.committed_at),
            "commit_to_first_audio_ms": span(self.committed_at, self.first_audio_at),
            "first_audio_to_playing_ms": span(self.first_audio_at, self.first_played_at),
        }
        return {k: v for k, v in pairs.items() if v is not None}
