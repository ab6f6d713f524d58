"""What an :class:`~huxleyd.audio.audio_thread.AudioThread` is built from: a few named parts.

Layer: value types over parts the engine builds (no I/O, no thread). Instead
of a constructor of sixteen parameters, the thread takes :class:`Platform`
(the device and how the thread computes), and by keyword the settings, the
clock, :class:`SpeakerSide` (what it plays from), :class:`MicSide` (where
the microphone goes) and :class:`Reporters` (whom it tells, on asyncio).

The thread copies each field into its own attribute when built: the
per-period code never reads through a part (docs/conventions.md, rule 4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from huxleyd.audio.backends.base import AudioBackend
from huxleyd.audio.fed import FedOutput
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import AsyncWaker, FrameRing
from huxleyd.audio.source import PlaybackSource
from huxleyd.audio.types import SourceName

Reporter = Callable[[Any], None]
"""An asyncio-side callback the thread hands an event to (state, fault, crash)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Platform:
    """The device, and how the thread computes a period."""

    backend: AudioBackend
    kernel: ModuleType | None
    """The chains' C kernel, or None for their numpy path (tests compare; the mix
    is the C core either way: :mod:`huxleyd.audio.mixer`)."""
    idle_path: bool
    """Skip the mixing and resampling of silent periods (off only to compare)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakerSide:
    """What the thread plays from, and what it tells about what it played."""

    mixer: Mixer
    playout: PlayoutClock
    sources: dict[SourceName, PlaybackSource]
    meter: LevelMeter
    """The output's level meter."""
    fed: FedOutput | None = None
    """The C feeder: runs the mix instead of the thread while the card is open
    (:mod:`.fed`); None (the WAV backend): the thread runs it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MicSide:
    """Where the microphone's periods go, at which rate, and who is woken."""

    capture: FrameRing
    waker: AsyncWaker
    rate_hz: int
    """The capture rate the ring starts at (24 kHz, or 16 kHz when a provider asks)."""
    meter: LevelMeter
    """The input's level meter."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reporters:
    """Whom the thread tells, on asyncio: each gets one event, never per sample."""

    on_state: Reporter
    """A device state (open, lost, reopening, closed)."""
    on_fault: Reporter
    """An exception a period raised (the thread lives on and reopens the device)."""
    on_crash: Reporter
    """The exception that stopped the thread."""
