"""The engine's side of a timed output (the C callback backend): cuts and the DAC clock.

:class:`TimedOutput` keeps, for the audio thread, what the engine must know of
an :class:`~huxleyd.audio.backends.base.OutputClock`:

- **cuts**: asyncio asks one with :meth:`cut` right after a flush request; the
  audio thread acknowledges it (:meth:`acknowledge`) after the next mix, which
  took the flush in, so the callback plays again from there. What the callback
  dropped in between had been mixed: it is recorded as skips, never as heard.
- **the DAC clock**: :meth:`publish` turns the frame at the DAC into each
  source's ``played_pos`` through the playout clock's history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from huxleyd.audio.backends.base import OutputClock
from huxleyd.audio.playout import PeriodPulls, PlayoutClock


def _none_pending() -> Sequence[PeriodPulls]:
    return ()


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
