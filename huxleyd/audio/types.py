"""Typed messages of the audio layer: mic frames, device states, engine health."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

SourceName = Literal["speech", "earcon", "content", "comms"]
"""A playback source of the mixer."""

SOURCES: tuple[SourceName, ...] = ("speech", "earcon", "content", "comms")
"""All sources, in mixing order (earcon before speech: speech may wait on it)."""


class Earcon(enum.StrEnum):
    """A UI sound the daemon plays; the value is its file name in the sounds
    directory without ``.wav``.

    A ``StrEnum`` because the name crosses modules as text: it keys the
    loaded palette (``{name: pcm}``), a close verdict's ``cue`` in the
    journal, and a file name on disk. ``str(Earcon.ERROR) == "error"``.
    """

    LISTEN_START = "listen_start"
    LISTEN_STOP = "listen_stop"
    THINKING = "thinking"
    ERROR = "error"
    OFFLINE = "offline"
    TIMER = "timer"
    TOO_SHORT = "too_short"
    KEY_REFUSED = "key_refused"
    """Optional (not shipped): played once when the provider refuses the API
    key; without the file the OFFLINE earcon plays instead."""
    DEGRADED = "degraded"
    """Optional (not shipped): "something is wrong", at the first press after a
    part started degraded (the database, a skill); without the file the ERROR
    earcon plays instead."""


OPTIONAL_EARCONS = frozenset({Earcon.KEY_REFUSED, Earcon.DEGRADED})
"""Earcons a sounds directory may leave out (a fallback plays)."""

SHIPPED_EARCONS = tuple(e for e in Earcon if e not in OPTIONAL_EARCONS)
"""The earcons ``sounds/`` must hold (``scripts/make_sounds.py`` makes them)."""


@dataclass(frozen=True, slots=True)
class MicFrame:
    """One period of microphone audio, already at the consumer's rate.

    ``pcm`` is PCM16 little-endian mono at ``rate_hz`` (24 kHz, or 16 kHz when
    a provider asked for it). ``captured_at`` is the engine clock's monotonic
    time, in seconds, of the frame's first sample (device input latency
    included). ``seq`` counts frames since the engine started; a gap in it
    means frames were dropped.
    """

    pcm: bytes
    rate_hz: int
    captured_at: float
    seq: int

    @property
    def duration_ms(self) -> float:
        return len(self.pcm) / 2 * 1000.0 / self.rate_hz


class DeviceState(enum.Enum):
    """Where the sound device stands."""

    CLOSED = "closed"
    """Not opened yet, or closed by :meth:`AudioEngine.close`."""
    OPEN = "open"
    LOST = "lost"
    """Failed or vanished; the engine keeps running and plays to nowhere."""
    REOPENING = "reopening"
    """A reopen attempt is under way (every ``reopen_interval_s``)."""


@dataclass(frozen=True, slots=True)
class Silences:
    """Every silence the listener could hear inside a reply, once each, by cause: the
    one place they are counted (``huxleyctl status``, ``levels`` and the bench read
    it). Lengths come from the stamps of whoever saw the silence: the callback's
    frames of zeros (a dry ring), the C feeder's clock from a source running dry to
    its next sample (a late source), the engine's clock around a reopen plus the new
    stream's latency to the DAC (a reopen). A card xrun is at most one device period
    (the budget), its length is not stamped."""

    card_xruns: int = 0
    """The card's own xruns on the speaker (its callback was late: the CPU)."""
    dry_ring: int = 0
    """Device periods the callback's ring ran dry while a source had audio queued
    (the feeder, or the Python mix, was late)."""
    dry_ring_ms: float = 0.0
    late_source: int = 0
    """A source ran dry before its end and went on (the producer was late: a
    delta held up by a stalled event loop)."""
    late_source_ms: float = 0.0
    reopens: int = 0
    """Reopens of the speaker (a step of the period ladder) while audio was queued."""
    reopen_ms: float = 0.0

    @property
    def count(self) -> int:
        return self.card_xruns + self.dry_ring + self.late_source + self.reopens

    def to_dict(self) -> dict[str, float]:
        return {
            "card_xruns": self.card_xruns,
            "dry_ring": self.dry_ring,
            "dry_ring_ms": round(self.dry_ring_ms, 1),
            "late_source": self.late_source,
            "late_source_ms": round(self.late_source_ms, 1),
            "reopens": self.reopens,
            "reopen_ms": round(self.reopen_ms, 1),
        }


@dataclass(frozen=True, slots=True)
class EngineStats:
    """A snapshot of the engine's health, for the watchdog and ``huxleyctl``.

    ``periods`` only advances while the audio thread runs periods: the
    watchdog feeds systemd only while it moves. Levels are dBFS (0 = full
    scale, ``-120`` = digital silence); peaks decay at 20 dB/s, RMS is
    averaged over about 300 ms.
    """

    periods: int
    underruns: int
    """Device output underruns plus source gaps (see ``source_gaps``)."""
    overruns: int
    """Device input overruns (the mic delivered more than we read in time)."""
    late_periods: int
    """Periods that started more than one period after their deadline."""
    mic_frames_dropped: int
    """Capture frames lost because asyncio read them too late."""
    source_gaps: int
    """Times a source ran dry in the middle of an item that later continued."""
    device_state: DeviceState
    input_peak_dbfs: float
    input_rms_dbfs: float
    output_peak_dbfs: float
    output_rms_dbfs: float
    output_latency_ms: float
    """Device output latency plus resampler delay, as used by the playout clock."""
    running: bool
    """True while the audio thread is alive."""
    speaker_dropouts: int = 0
    """Device periods the speaker went (partly) silent while a source had audio
    queued: the C callback's ring ran dry because the engine was not run in time.
    The card saw no xrun (it was fed silence); counted in ``underruns`` too."""
    source_dropouts: tuple[tuple[SourceName, int], ...] = ()
    """``speaker_dropouts`` per source that had audio queued then (sources with
    none left out): a period in which two sources held audio counts for both."""
    faults: int = 0
    """Periods that raised (e.g. a write error on the speaker); each closed the
    device, which was then reopened like a lost one. The thread kept running."""
    last_fault: str | None = None
    """The last such error, for ``huxleyctl doctor``."""
    open_error: str | None = None
    """Why the device did not open at the last try (None once it is open)."""
    period_widened: str = ""
    """Why the device runs a longer period than its first (the card xran again and
    again: this machine could not keep it), or empty (:mod:`~huxleyd.audio.xrun_watch`)."""
    period_steps: tuple[int, int] = (0, 0)
    """Steps of the period ladder since start: (wider, narrower), each a reopen."""
    silences: Silences = Silences()
    """Every silence heard inside a reply, by cause (see :class:`Silences`)."""

    @property
    def card_underruns(self) -> int:
        """The card's own underruns: ``underruns`` less the periods the engine fed
        silence (``speaker_dropouts``) and the gaps inside a source's items."""
        return self.underruns - self.speaker_dropouts - self.source_gaps
