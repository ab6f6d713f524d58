"""What a :class:`~huxleyd.turns.coordinator.Coordinator` is built from: a few named parts.

Layer: value types over the turn layer's ports. Instead of a constructor of
fifteen keywords, the coordinator takes :class:`TurnPorts` (what it
drives), and by keyword :class:`TurnPersona` (what it says and plays),
:class:`TurnSettings` (its thresholds), :class:`TurnTiming` (time, an
input) and :class:`MicSetup` (how the microphone starts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from huxleyd.clock import Clock, MonotonicClock
from huxleyd.degraded import Degraded
from huxleyd.providers.base import ProviderSession
from huxleyd.skillhost.host import SkillHost
from huxleyd.turns.instructions import SessionInstructions
from huxleyd.turns.ports import AudioPort, VolumePort
from huxleyd.turns.wake import WakeWord


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPorts:
    """What the turn layer drives, each behind a narrow edge."""

    provider: ProviderSession
    audio: AudioPort
    volume: VolumePort
    host: SkillHost
    degraded: Degraded | None = None
    """Parts running degraded: the first press after a new one plays the cue."""
    renew_session_if_due: Callable[[], None] | None = None
    """Asked at the end of every turn: the connection renews between turns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPersona:
    """What the device says and plays."""

    instructions: str = ""
    """The persona's instructions (an announcement or a book's end adds to them)."""
    session_instructions: SessionInstructions | None = None
    """Refreshed (the skills' ``prompt_context``) before each turn and each follow-up."""
    earcons: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnSettings:
    """Thresholds of the turn layer."""

    min_turn_ms: float = 150.0
    """A press with less audio than this is dropped with an earcon, not committed."""
    silent_response_timeout_s: float = 6.0
    """After asking for a reply: no audio and no tool call within this → retry."""
    max_silent_retries: int = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTiming:
    """Time, an input: the clock turns are measured with, and how tasks wait."""

    clock: Clock = field(default_factory=MonotonicClock)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


@dataclass(frozen=True, slots=True, kw_only=True)
class MicSetup:
    """How the microphone starts."""

    wake: WakeWord | None = None
    """The wake word, when configured and its detector loaded (``handsfree``)."""
    muted: bool = False
    """The mute the user last chose (kept across restarts)."""
