"""When the card's own xruns say this machine cannot keep the device's period.

The callback backend plays in short periods (2.5 ms at SCHED_FIFO): what a
12 ms barge-in needs. A machine that cannot run the callbacks that often (a
Zero 2 W under load, a Pi emulated on a PC) underruns again and again, and the
listener hears a speaker that breaks up, every few periods, for as long as it
plays. One xrun is one period of silence and never a reopen (a budget of
docs/conventions.md); ``limit`` of them within ``window_s`` mean the period
itself is out of this machine's reach. The audio thread then asks the backend
for the next, longer period of its ladder (:class:`~.backends.base.WidenablePeriod`)
and reopens at once: a few milliseconds of barge-in traded for a speaker that
plays whole.

Only the card's xruns count (the callbacks' status flags, speaker and mic): a
dropout (the ring ran dry because what feeds it was late) is not the period's
fault, and a longer period would not cure it. And they count by the period
they are seen in, not one by one: a machine that stalls once (a VM's host
descheduling it for 20 ms) leaves a burst of xruns, speaker and mic, seen in
one period, and a longer period would not have saved them; the reopen would
only cost a gap (measured: 167 ms at a Pi 4's share of this machine, where a
burst of five in 1.3 s widened the period). A machine out of its depth xruns
period after period.

The ladder narrows again after a calm stretch: :data:`NARROW_CALM_S` without one
card xrun at the wider period, and only while nothing plays (the reopen's gap is
then heard by nobody), steps back one period. A stretch of host stalls (a VM's
neighbour, an upgrade running) lasts seconds to a minute; two calm minutes are
twelve windows of :data:`XRUN_WINDOW_S` without a single xrun, the evidence that it
is over. Measured before this rule: five ~8 ms stalls within 10 s widened 2.5 → 5 ms
and every barge-in of the next 19.9 minutes was a period slower. A narrowing that
the card answers with a widening again within the calm stretch doubles the stretch
the next one needs (up to :data:`NARROW_CALM_MAX_S`): a machine that truly cannot
keep the short period is not reopened every two minutes.
"""

from __future__ import annotations

import math

from huxleyd.audio.backends.base import WidenablePeriod

XRUN_LIMIT = 5
"""Periods with new card xruns, within :data:`XRUN_WINDOW_S`, that widen the period."""
XRUN_WINDOW_S = 10.0
"""A healthy device shows none in an hour; a machine that cannot keep the period,
several a second (the emulated Pi: 9 a second)."""


NARROW_CALM_S = 120.0
"""Seconds without a card xrun at a widened period before it narrows one step."""
NARROW_CALM_MAX_S = 3600.0
"""The longest calm stretch a narrowing waits for after failed ones (doubling)."""


class XrunWatch:
    """Counts the periods in which the card xran against a window; the audio thread
    feeds it once a period.

    Per period it costs one comparison (and a store when there are new xruns); it
    never allocates: the last ``limit`` times sit in a fixed ring.
    """

    __slots__ = (
        "_narrowed_at",
        "_next",
        "_quiet_since",
        "_seen",
        "_span_s",
        "_times",
        "calm_s",
        "limit",
        "needed_calm_s",
        "window_s",
    )

    def __init__(
        self,
        *,
        limit: int = XRUN_LIMIT,
        window_s: float = XRUN_WINDOW_S,
        calm_s: float = NARROW_CALM_S,
    ) -> None:
        if limit < 1 or window_s <= 0 or calm_s <= 0:
            raise ValueError(
                f"XrunWatch needs limit >= 1, window_s > 0 and calm_s > 0, got {limit}, "
                f"{window_s}, {calm_s}"
            )
        self.limit = limit
        self.window_s = window_s
        self.calm_s = calm_s
        self.needed_calm_s = calm_s
        """The calm stretch the next narrowing waits for (doubled by failed ones)."""
        self._times = [-math.inf] * limit
        self._next = 0
        self._seen = 0
        self._span_s = 0.0
        self._quiet_since = 0.0
        self._narrowed_at = -math.inf

    def observe(self, now_s: float, xruns: int) -> bool:
        """Take the card's xrun count since the device opened (cumulative), at
        ``now_s``: True when ``limit`` of the observations that saw it grow fell
        within ``window_s`` (however many xruns each one saw)."""
        if xruns <= self._seen:
            self._seen = xruns  # unchanged, or a reopen restarted the device's count
            return False
        self._seen = xruns
        self._quiet_since = now_s
        times, limit = self._times, self.limit
        times[self._next] = now_s
        self._next = (self._next + 1) % limit
        span = now_s - times[self._next]  # the oldest of the last `limit`
        if span > self.window_s:
            return False
        self._span_s = span
        return True

    def reason(self) -> str:
        """What the last True of :meth:`observe` saw, for the log and doctor."""
        return f"card xruns in {self.limit} periods within {self._span_s:.1f} s"

    def calm(self, now_s: float) -> bool:
        """No card xrun for the calm stretch: a widened period may narrow one step."""
        return now_s - self._quiet_since >= self.needed_calm_s

    def stepped(self, now_s: float, *, wider: bool) -> None:
        """The period changed (a reopen): count xruns from 0 and calm from now. A
        widening within a calm stretch of the last narrowing doubles the next stretch."""
        if wider and now_s - self._narrowed_at < self.needed_calm_s:
            self.needed_calm_s = min(2 * self.needed_calm_s, NARROW_CALM_MAX_S)
        if not wider:
            self._narrowed_at = now_s
        self.reset()
        self._quiet_since = now_s

    def reset(self) -> None:
        """Forget every xrun seen (a device opened anew counts from 0)."""
        self._times[:] = [-math.inf] * self.limit
        self._next = 0
        self._seen = 0


class PeriodLadder:
    """The steps along a backend's ladder of periods the watch asks for, and what
    they cost the listener. The audio thread asks :meth:`due` once a period of an
    open device, moves the backend with :meth:`step`, reopens at the new period and
    says so with :meth:`reopened`.
    """

    def __init__(self, widenable: WidenablePeriod | None) -> None:
        self.widenable = widenable
        """The backend's ladder of longer periods (the C callbacks'), or None."""
        self.watch = XrunWatch()
        self.steps = [0, 0]
        """Ladder steps since start: [wider, narrower] (each a reopen)."""
        self.silences = 0
        """Reopens the engine chose (a ladder step) while a source had audio queued."""
        self.silence_s = 0.0
        """Their summed silence: the close to the open's return, plus the new stream's
        output latency (when its first sample reaches the DAC)."""

    def due(self, now_s: float) -> bool | None:
        """After a period of the open device: True when the card xran again and again
        (widen), False after a calm stretch at a widened period (narrow, and only
        while nothing plays: the caller knows that), None to stay."""
        widenable, watch = self.widenable, self.watch
        if widenable is None:
            return None
        if watch.observe(now_s, widenable.card_xruns()):
            return True
        if widenable.widened() and watch.calm(now_s):
            return False
        return None

    def step(self, *, wider: bool) -> bool:
        """Move the backend one step (its next open uses it), counted; False at the
        ladder's end (wider: play on and count the xruns)."""
        widenable = self.widenable
        if widenable is None:
            return False
        moved = widenable.widen(self.watch.reason()) if wider else widenable.narrow()
        if moved:
            self.steps[0 if wider else 1] += 1
        return moved

    def reopened(self, now_s: float, *, wider: bool, heard_s: float | None) -> None:
        """The reopen at the new period returned at ``now_s``; ``heard_s`` is the
        silence it made while a source had audio queued (None: nobody heard it)."""
        if heard_s is not None:
            self.silences += 1
            self.silence_s += heard_s
        self.watch.stepped(now_s, wider=wider)
