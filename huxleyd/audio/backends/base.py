"""The backend interface: what a sound device must do for the engine.

A backend is driven from the audio thread only, one period at a time:
``open`` once (and again after a loss), then ``read`` and ``write`` each
period, ``close`` at the end. It never raises from ``read``/``write``:
it reports :class:`IoStatus` so the thread can count xruns and handle a
lost device without an exception on the hot path. ``open`` raises
:class:`~huxleyd.errors.AudioDeviceError` naming the device when it cannot.

A subclass must implement all four methods; ``read`` fills the given
preallocated array and ``write`` consumes one, so a backend need not
allocate per period either.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from huxleyd.pcm import Int16Array


class IoStatus(enum.Enum):
    """Outcome of one ``read`` or ``write``."""

    OK = "ok"
    XRUN = "xrun"
    """The data went through, but the device over/underran before it."""
    LOST = "lost"
    """The device failed or vanished; nothing went through."""


@dataclass(frozen=True, slots=True)
class DeviceFormat:
    """What ``open`` got from the device."""

    input_rate_hz: int
    output_rate_hz: int
    input_channels: int
    output_channels: int
    output_latency_s: float
    """Time from ``write`` returning to the sound leaving the device (PortAudio's estimate)."""
    input_latency_s: float
    """Time from sound entering the device to ``read`` returning it."""
    paced: bool
    """True when ``read`` blocks until a period exists (a real device clock);
    False when the engine's clock must pace the loop (WAV files, null sinks)."""
    description: str = ""
    """Human-readable devices, for logs and ``huxleyctl status``."""


class AudioBackend(Protocol):
    """A full-duplex PCM16 device, one period per call."""

    def open(self, *, period_ms: int) -> DeviceFormat:
        """Open the device for ``period_ms`` periods; raise AudioDeviceError if impossible."""
        ...

    def read(self, out: Int16Array) -> IoStatus:
        """Fill ``out`` (``(frames, input_channels)`` int16) with the next period of input."""
        ...

    def write(self, data: Int16Array) -> IoStatus:
        """Play ``data`` (``(frames, output_channels)`` int16), one period."""
        ...

    def close(self) -> None:
        """Release the device. Idempotent; the backend may be opened again."""
        ...


@runtime_checkable
class OutputClock(Protocol):
    """A backend whose playback says which frame is at the DAC, and can cut.

    Positions are device frames counted from the open: frame ``k`` is the
    ``k``-th frame ever written. The engine uses it instead of a latency
    guessed at open (see :class:`~huxleyd.audio.playout.PlayoutClock`).
    """

    def written_frames(self) -> int:
        """Frames written since the open."""
        ...

    def queued_frames(self) -> int:
        """Frames written and not yet handed to the device."""
        ...

    def heard_frame(self) -> int:
        """The frame at the DAC now."""
        ...

    def cut(self) -> tuple[int, int] | None:
        """Fade out from the device's next short period, then mute until :meth:`resume`.
        Returns ``(seq, fade_end)``: the frame where the listener stops hearing."""
        ...

    def resume(self, seq: int, at: int) -> None:
        """Frames from ``at`` on were mixed after cut ``seq``: play them."""
        ...

    def drops(self) -> tuple[int, int, int]:
        """``(cuts completed, first dropped frame, first frame played after)``."""
        ...

    def expect_audio(self, sources: int) -> None:
        """Say, once a period, which sources have audio queued behind what was
        written (bit ``i``: the engine's source ``SOURCES[i]``; 0: none): while any
        has, a device period the ring cannot fill is a dropout."""
        ...

    def dropouts(self) -> int:
        """Device periods since the open that went (partly) silent while a source
        had audio queued (see :meth:`expect_audio`): what the listener heard as gaps."""
        ...

    def dropout_ms(self) -> float:
        """The silence those :meth:`dropouts` played, in ms (the frames the callback
        filled with zeros, at the device rate)."""
        ...

    def source_dropouts(self) -> tuple[int, ...]:
        """:meth:`dropouts` per :meth:`expect_audio` bit: the periods each source
        had audio queued and the speaker went silent (a period counts for each)."""
        ...

    def xrun_counts(self) -> tuple[int, int]:
        """(output underruns, input overruns) since the open: the callbacks' status
        flags and the periods the speaker went silent while audio was queued (the
        card never sees those: it is fed silence), plus mic periods lost because
        the engine read too late."""
        ...


@runtime_checkable
class FeedableOutput(Protocol):
    """A backend whose speaker is the C callback's ring (``_rt.Output``), which the
    C feeder (:mod:`huxleyd.audio.fed`) can write instead of the engine."""

    def output_stream(self) -> Any:
        """The open ``_rt.Output``, or None while closed."""
        ...


@runtime_checkable
class QueuedInput(Protocol):
    """A backend whose capture fills a ring the engine reads (the C capture callback):
    a late engine can see what is already waiting and catch up without losing it."""

    def input_queued_frames(self) -> int:
        """Frames captured and not yet read."""
        ...

    def discard_input(self, keep_frames: int) -> int:
        """Skip to the newest ``keep_frames`` (nobody listened); return how many were
        dropped. Not counted as lost."""
        ...


@runtime_checkable
class StampedInput(Protocol):
    """A backend that knows when the card captured each period it reads (the C
    capture callback's per-period ADC stamps), not only when the engine read it."""

    def input_captured_ago(self) -> float | None:
        """Seconds from the capture of the first frame of the period the last
        ``read`` filled to now, or None when that period has no stamp."""
        ...


@runtime_checkable
class WidenablePeriod(Protocol):
    """A backend whose device periods have a ladder of longer ones (the C callbacks):
    where the machine cannot keep the short one, the engine takes the next
    (:mod:`huxleyd.audio.xrun_watch`)."""

    def card_xruns(self) -> int:
        """The card's own xruns since the open (the callbacks' status flags, speaker
        and mic), without the dropouts a late feeder made."""
        ...

    def widen(self, reason: str) -> bool:
        """Take the ladder's next, longer period at the next ``open`` (``reason``: what
        the card showed, said with the device's description); False at the top."""
        ...

    def narrow(self) -> bool:
        """Take the ladder's previous, shorter period at the next ``open`` (after a
        calm stretch); False when the device already runs its first period."""
        ...

    def widened(self) -> str:
        """Why the device runs a longer period than its first (the last ``reason``,
        with the periods), or an empty string."""
        ...
