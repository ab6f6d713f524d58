"""The engine's side of a timed output (the C callback backend): cuts and the DAC clock.

:class:`TimedOutput` keeps, for the audio thread, what the engine must know of
an :class:`~huxleyd.audio.backends.base.OutputClock`:

- **cuts**: asyncio asks one with :meth:`cut` right after a flush request; the
  audio thread acknowledges it (:meth:`acknowledge`) after the next mix, which
  took the flush in, so the callback plays again from there. What the callback
  dropped in between had been mixed: it is recorded as skips, never as heard.
- **the DAC clock**: :meth:`publish` turns the frame at the DAC into each
  source's ``played_pos`` through the playout clock's history.
- **the device's counters** (its xruns and dropouts), which restart with each
  open: :meth:`keep_counts` keeps them across a close, :meth:`counts` sums them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from huxleyd.audio.backends.base import DeviceFormat, OutputClock
from huxleyd.audio.playout import PeriodPulls, PlayoutClock
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import SOURCES


def lead_s(settings: AudioSettings, fmt: DeviceFormat) -> float:
    """How far ahead of the DAC the callback's ring is kept: ``output_lead_ms``, and
    at least one and a half times the device's latency, whose callback takes a
    whole period at once (a widened period, :mod:`.xrun_watch`, needs more)."""
    return max(settings.output_lead_ms / 1000, 1.5 * fmt.output_latency_s)


def _none_pending() -> Sequence[PeriodPulls]:
    return ()


@dataclass(slots=True)
class DeviceCounts:
    """A timed output's own counters, summed over the devices it counted."""

    underruns: int = 0
    overruns: int = 0
    dropouts: int = 0
    """Device periods fed silence while audio was queued (the ring ran dry)."""
    dropout_ms: float = 0.0
    """The silence those dropouts played, in ms."""
    source_dropouts: list[int] = field(default_factory=lambda: [0] * len(SOURCES))
    """The dropouts per source (SOURCES order): periods it had audio queued in."""

    def add(self, out: OutputClock) -> None:
        """Add what ``out``'s open device counted so far."""
        under, over = out.xrun_counts()
        self.underruns += under
        self.overruns += over
        self.dropouts += out.dropouts()
        self.dropout_ms += out.dropout_ms()
        for i, count in enumerate(out.source_dropouts()[: len(SOURCES)]):
            self.source_dropouts[i] += count


class TimedOutput:
    """Cut sequence numbers, lead and DAC position for one timed output."""

    def __init__(self, out: OutputClock, playout: PlayoutClock) -> None:
        self.out = out
        self._playout = playout
        self.lead_frames = 0
        self._cut_seq = 0
        """The newest cut asked (written by asyncio, after the flush request)."""
        self._cut_acked = 0
        self._cuts_done = 0
        self._last_heard = -1
        self.unrecorded: Callable[[], Sequence[PeriodPulls]] = _none_pending
        """The periods written to the device and not yet in the playout clock (the
        C feeder's undrained reports): a cut answers from them too."""
        self._closed = DeviceCounts()
        """What the devices closed since start counted (the open one's are its own)."""

    def keep_counts(self) -> None:
        """The open device is about to close: keep its counters, which a close resets."""
        self._closed.add(self.out)

    def counts(self, *, open_: bool) -> DeviceCounts:
        """Every device's counters since start: the closed ones', and the open one's
        when ``open_`` (asyncio's stats; not for the audio thread: it allocates)."""
        counts = replace(self._closed, source_dropouts=list(self._closed.source_dropouts))
        if open_:
            counts.add(self.out)
        return counts

    def opened(self, *, frames: int, delay_frames: int, lead_frames: int) -> None:
        """The device (re)opened: its positions and cut numbers start again at 0."""
        self._playout.start_device(frames=frames, delay_frames=delay_frames)
        self.lead_frames = lead_frames
        self._cut_acked = self._cut_seq = self._cuts_done = 0
        self._last_heard = -1

    def cut(self) -> list[int] | None:
        """asyncio: fade out now; return each source's ring position at the fade's end."""
        cut = self.out.cut()
        if cut is None:
            return None
        seq, fade_end = cut
        self._cut_seq = seq  # after the flush request: the thread's next mix sees both
        # every frame up to fade_end was in the ring when cut() looked, so its period
        # is recorded or (logged before its write) among the unrecorded ones
        return self._playout.positions_at(fade_end, self.unrecorded())

    def pending_cut(self) -> int:
        """The cut to acknowledge after this period's mix (read before mixing)."""
        return self._cut_seq

    def acknowledge(self, seq: int) -> None:
        """The mix that took in cut ``seq``'s flush is written: play from here on."""
        if seq != self._cut_acked:
            self.out.resume(seq, self.out.written_frames())
            self._cut_acked = seq

    def acknowledged(self, seq: int) -> None:
        """The C feeder acknowledged cut ``seq`` itself (it resumed the callback)."""
        self._cut_acked = seq

    def settled(self) -> bool:
        """No cut pending and every written frame reached the DAC and was published
        (so every source's played position is final): the engine may sleep."""
        return self._cut_acked == self._cut_seq and self._last_heard >= self.out.written_frames()

    def lead_reached(self) -> bool:
        return self.out.queued_frames() >= self.lead_frames

    def publish(self) -> None:
        """Record what finished cuts dropped; publish what reached the DAC."""
        done, dropped_from, dropped_to = self.out.drops()
        heard = self.out.heard_frame()
        if heard == self._last_heard and done == self._cuts_done:
            return  # nothing reached the DAC since last period (idle): nothing to do
        self._last_heard = heard
        if done != self._cuts_done:
            self._cuts_done = done
            # what the cut dropped had been mixed: those samples were never heard
            self._playout.record_dropped(dropped_from, dropped_to)
        self._playout.publish_device(heard)
