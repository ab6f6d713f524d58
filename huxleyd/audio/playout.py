"""Playout accounting: what of each source has really reached the device.

This module is the one owner of the accounting; the mixer only renders and
the source only produces. Per source there is one :class:`SourcePlayout`
record, shared by the two worlds under a one-writer-per-field contract:

=================  ============================  ===============================
field              written by                    read by
=================  ============================  ===============================
``skips``          audio thread (a flush drops   asyncio (:class:`ItemLedger`)
                   queued samples; a timed cut
                   drops mixed ones)
``played_pos``     audio thread only             asyncio (:class:`PlayoutTracker`)
                   (:class:`PlayoutClock`),      and the thread (to wake waiters)
                   never decreasing
``drain_target``   asyncio only                  audio thread (wakes ``progress``
                   (:class:`PlayoutTracker`)     once ``played_pos`` reaches it)
=================  ============================  ===============================

Every field is a plain int store (atomic under the GIL); nothing locks.

The halves:

- :class:`PlayoutClock` (audio thread). Every period it records, per source,
  which ring samples went into the mix and where in the period they started.
  The device is ``latency_samples`` behind the mix (its own buffer, as the
  backend reports it, plus the output resampler's delay), so the mixer
  sample now leaving the speaker is ``periods * N - latency_samples``; the
  history says which ring sample that was. The result is published per source
  as :attr:`SourcePlayout.played_pos`.
- :class:`PlayoutTracker` (asyncio), with its :class:`ItemLedger`. It
  remembers which ring positions each item (``item_id``) occupies and where
  flushes cut the ring, and turns ``played_pos`` into "ms of item X heard" —
  the ``audio_end_ms`` that ``conversation.item.truncate`` needs on barge-in.
  Accurate to a sample in the mix, and to the backend's latency estimate (at
  worst one period) at the device.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class SkipLog:
    """Where the thread dropped samples of one source, for the item accounting.

    The thread appends ``(from_pos, to_pos)`` when it drops queued samples;
    asyncio reads entries newer than the last count it saw. ``slots`` bounds
    it: flushes are human-paced, and asyncio syncs before each new flush.
    """

    def __init__(self, slots: int = 32) -> None:
        self.slots = slots
        self._from = [0] * slots
        self._to = [0] * slots
        self.count = 0

    def record(self, from_pos: int, to_pos: int) -> None:
        slot = self.count % self.slots
        self._from[slot] = from_pos
        self._to[slot] = to_pos
        self.count += 1  # publish after the entry

    def since(self, seen: int) -> list[tuple[int, int]]:
        """Entries after the first ``seen`` (the oldest may be gone if > ``slots``)."""
        first = max(seen, self.count - self.slots)
        return [
            (self._from[i % self.slots], self._to[i % self.slots]) for i in range(first, self.count)
        ]


class SourcePlayout:
    """One source's accounting record, shared by the thread and asyncio (see the table)."""

    __slots__ = ("drain_target", "played_pos", "skips")

    def __init__(self) -> None:
        self.skips = SkipLog()
        self.played_pos = 0
        """Ring position that has reached the device (audio thread writes)."""
        self.drain_target = -1
        """asyncio asks to be woken when ``played_pos`` reaches this (-1: nobody)."""

    def wake_due(self) -> bool:
        """Thread: someone waits for a position the device has now played."""
        target = self.drain_target
        return target >= 0 and self.played_pos >= target


class Pulled(Protocol):
    """What the mixer published about one source's last period (thread side)."""

    pull_start: int
    pull_offset: int
    pull_count: int
    playout: SourcePlayout


@dataclass(frozen=True, slots=True)
class PeriodPulls:
    """One mixed period as the playout clock records it: the device frame it was
    written at and, per source (the clock's channel order), which ring samples it
    pulled and where in the period they started. The C feeder's reports not yet
    recorded reach a cut in this shape (:meth:`PlayoutClock.positions_at`)."""

    dev_start: int
    starts: tuple[int, ...]
    offsets: tuple[int, ...]
    counts: tuple[int, ...]


def _heard(start: int, offset: int, count: int, into: int) -> int:
    """The ring position of a source once ``into`` mixer samples of a period that
    pulled ``count`` samples from ``start``, beginning at ``offset``, were heard."""
    return start + min(max(into - offset, 0), count)


class PlayoutClock:
    """Per-period pull history → ``played_pos`` of every source (audio thread only).

    ``history_periods`` bounds how much latency can be accounted for
    (256 periods of 20 ms = 5 s; device buffers are well under a second).
    """

    def __init__(
        self,
        channels: Sequence[Pulled],
        *,
        period_samples: int,
        history_periods: int = 256,
    ) -> None:
        self._channels = tuple(channels)
        self._n = period_samples
        self._h = history_periods
        self._starts = [[0] * history_periods for _ in self._channels]
        self._offsets = [[0] * history_periods for _ in self._channels]
        self._counts = [[0] * history_periods for _ in self._channels]
        self._dev_starts = [-1] * history_periods
        self.dev_frames = 0
        """Device frames per period, for :meth:`publish_device` (0: not timed)."""
        self.dev_delay_frames = 0
        """The output resampler's delay, in device frames."""
        self.periods = 0
        """Periods recorded since the engine started."""
        self.latency_samples = 0
        """Mixer samples between the mix and the speaker (set when the device opens)."""
        self.device_pos = 0
        """Mixer samples that have reached the speaker."""

    def record_period(self, dev_start: int | None = None) -> None:
        """Note what each source contributed to the period just mixed; publish.

        ``dev_start``: with a timed output (a device that says which frame is at
        the DAC), the device position this period was written at, or -1 when it
        was not written (idle); the caller then publishes with
        :meth:`publish_device`. ``None``: publish from ``latency_samples``.
        """
        slot = self.periods % self._h
        for i, channel in enumerate(self._channels):
            self._starts[i][slot] = channel.pull_start
            self._offsets[i][slot] = channel.pull_offset
            self._counts[i][slot] = channel.pull_count
        self._dev_starts[slot] = -1 if dev_start is None else dev_start
        self.periods += 1  # publish the slot (asyncio may read it) only once complete
        if dev_start is None:
            self._publish()

    def start_device(self, *, frames: int, delay_frames: int) -> None:
        """A timed output opened: its positions start again at 0."""
        self.dev_frames = frames
        self.dev_delay_frames = delay_frames
        self._dev_starts = [-1] * self._h

    @property
    def channels(self) -> tuple[Pulled, ...]:
        """The sources, in the order of every per-source list here."""
        return self._channels

    def positions_at(self, dev_pos: int, pending: Sequence[PeriodPulls] = ()) -> list[int] | None:
        """Each source's ring position once device frame ``dev_pos`` has been heard.

        ``pending``: periods already written to the device and not yet recorded
        here (the C feeder's undrained reports, oldest first); they may repeat
        recorded ones. ``None`` when that frame is older than the history. Reads
        only slots the audio thread finished, so asyncio may call it too.
        """
        pos = dev_pos - self.dev_delay_frames
        period = self._find(pos)
        for candidate in reversed(pending):  # newest first: the first match is the one
            if 0 <= candidate.dev_start <= pos:
                if period is None or candidate.dev_start > period.dev_start:
                    period = candidate
                break
        if period is None:
            return None
        into = min(self._n, (pos - period.dev_start) * self._n // self.dev_frames)
        return [
            _heard(start, offset, count, into)
            for start, offset, count in zip(
                period.starts, period.offsets, period.counts, strict=True
            )
        ]

    def _find(self, pos: int) -> PeriodPulls | None:
        """The newest recorded period written at or before device frame ``pos`` (its
        frames, shifted by the resampler's delay)."""
        periods = self.periods  # once: the audio thread may record meanwhile
        for back in range(1, min(periods, self._h - 1) + 1):
            slot = (periods - back) % self._h
            start = self._dev_starts[slot]
            if 0 <= start <= pos:
                return PeriodPulls(
                    start,
                    tuple(starts[slot] for starts in self._starts),
                    tuple(offsets[slot] for offsets in self._offsets),
                    tuple(counts[slot] for counts in self._counts),
                )
        return None

    def publish_device(self, heard: int) -> None:
        """Publish ``played_pos`` from the device frame now at the DAC (timed output)."""
        positions = self.positions_at(heard)
        if positions is None:
            return
        for channel, played in zip(self._channels, positions, strict=True):
            playout = channel.playout
            if played > playout.played_pos:
                playout.played_pos = played

    def record_dropped(self, dev_from: int, dev_to: int) -> None:
        """A timed cut dropped device frames ``[dev_from, dev_to)`` after they were
        mixed: record the ring spans they carried as skips, never as heard."""
        for channel, (start, end) in zip(
            self._channels, self.dropped(dev_from, dev_to), strict=False
        ):
            if end > start:
                channel.playout.skips.record(start, end)

    def dropped(self, dev_from: int, dev_to: int) -> list[tuple[int, int]]:
        """Per source, the ring span ``[from, to)`` that device frames ``[dev_from,
        dev_to)`` carried: what a cut dropped after it was mixed."""
        start = self.positions_at(dev_from)
        end = self.positions_at(dev_to)
        if start is None or end is None:
            return []
        return list(zip(start, end, strict=True))

    def _publish(self) -> None:
        n = self._n
        latency = min(self.latency_samples, (self._h - 1) * n)
        heard = self.periods * n - latency
        if heard <= 0:
            return
        self.device_pos = heard
        period = (heard - 1) // n
        into = heard - period * n  # mixer samples of that period already heard (1..n)
        slot = period % self._h
        for i, channel in enumerate(self._channels):
            played = _heard(
                self._starts[i][slot], self._offsets[i][slot], self._counts[i][slot], into
            )
            playout = channel.playout
            if played > playout.played_pos:  # monotonic even if the latency estimate changes
                playout.played_pos = played


@dataclass(slots=True)
class _Item:
    start: int
    end: int


class ItemLedger:
    """Ring positions of each item and the cuts flushes made (asyncio side only).

    Keeps the ``max_items`` most recent items; asking about an older or
    unknown item answers 0.
    """

    def __init__(self, skips: SkipLog, *, max_items: int = 64) -> None:
        self._skips_log = skips
        self._seen = 0
        self._cuts: list[tuple[int, int]] = []
        self._items: OrderedDict[str, _Item] = OrderedDict()
        self._last: str | None = None
        self._max = max_items

    def note_write(self, item_id: str | None, start: int, end: int) -> None:
        """Samples ``[start, end)`` of the ring now belong to ``item_id``."""
        if item_id is None:
            self._last = None
            return
        item = self._items.get(item_id)
        if item is not None and self._last == item_id and item.end == start:
            item.end = end
        elif item is not None:
            item.end = max(item.end, end)  # interleaved with other items: keep the span
        else:
            self._items[item_id] = _Item(start, end)
            while len(self._items) > self._max:
                self._items.popitem(last=False)
        self._last = item_id

    def trim(self, item_id: str | None, end: int) -> None:
        """A write stopped early (cancelled or flushed): the item ends at ``end``."""
        if item_id is not None and (item := self._items.get(item_id)) is not None:
            item.end = min(item.end, max(item.start, end))

    def sync(self) -> None:
        """Take in the flush cuts the audio thread made since the last call."""
        if self._skips_log.count == self._seen:
            return
        self._cuts.extend(self._skips_log.since(self._seen))
        self._seen = self._skips_log.count
        oldest = min((item.start for item in self._items.values()), default=None)
        if oldest is not None:
            self._cuts = [cut for cut in self._cuts if cut[1] > oldest]

    def played_samples(self, item_id: str, played_pos: int) -> int:
        """Samples of ``item_id`` that reached the device, given ``played_pos``."""
        self.sync()
        item = self._items.get(item_id)
        if item is None:
            return 0
        upto = min(item.end, played_pos)
        if upto <= item.start:
            return 0
        heard = upto - item.start
        for cut_from, cut_to in self._cuts:
            overlap = min(cut_to, upto) - max(cut_from, item.start)
            if overlap > 0:
                heard -= overlap
        return heard

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items


class PlayoutTracker:
    """The asyncio side of one source's accounting: items, cuts, floor, wake-up targets.

    Reads the thread's fields of its :class:`SourcePlayout`; writes only
    ``drain_target``. :meth:`add_target`/:meth:`remove_target` keep the lowest
    position anyone waits for published, so the thread wakes ``progress`` once.
    """

    def __init__(self, playout: SourcePlayout, *, max_items: int = 64) -> None:
        self._playout = playout
        self.ledger = ItemLedger(playout.skips, max_items=max_items)
        self._targets: list[int] = []
        self.heard_floor = 0
        """A ring position known to be heard even before it reaches the DAC: where a
        cut's fade ends (on a timed output, whose fade the callback plays at once)."""

    @property
    def played_pos(self) -> int:
        """Ring position that has reached the device."""
        return self._playout.played_pos

    def heard(self, position: int) -> bool:
        """The device has played the ring up to ``position``."""
        return self._playout.played_pos >= position

    def played_samples(self, item_id: str) -> int:
        """Samples of ``item_id`` heard: at the device, or before its fade's end."""
        played = max(self._playout.played_pos, self.heard_floor)
        return self.ledger.played_samples(item_id, played)

    def unheard(self, write_pos: int) -> int:
        """Samples written up to ``write_pos`` and not heard yet."""
        return max(0, write_pos - self._playout.played_pos)

    def add_target(self, position: int) -> None:
        self._targets.append(position)
        self._publish_target()

    def remove_target(self, position: int) -> None:
        self._targets.remove(position)
        self._publish_target()

    def _publish_target(self) -> None:
        self._playout.drain_target = min(self._targets) if self._targets else -1
