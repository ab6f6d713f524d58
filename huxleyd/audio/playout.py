"""The playout clock: how much of each queued item has really reached the device.

Two halves:

- :class:`PlayoutClock` (audio thread). Every period it records, per source,
  which ring samples went into the mix and where in the period they started.
  The device is ``latency_samples`` behind the mix (its own buffer, as the
  backend reports it, plus the output resampler's delay), so the mixer
  sample now leaving the speaker is ``periods * N - latency_samples``; the
  history says which ring sample that was. The result is published per source
  as :attr:`~huxleyd.audio.mixer.SourceChannel.played_pos`.
- :class:`ItemLedger` (asyncio). It remembers which ring positions each item
  (``item_id``) occupies and where flushes cut the ring, and turns
  ``played_pos`` into "ms of item X heard" — the ``audio_end_ms`` that
  ``conversation.item.truncate`` needs on barge-in. Accurate to a sample in
  the mix, and to the backend's latency estimate (at worst one period) at the
  device.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from huxleyd.audio.mixer import SkipLog, SourceChannel


class PlayoutClock:
    """Per-period pull history → ``played_pos`` of every source (audio thread only).

    ``history_periods`` bounds how much latency can be accounted for
    (256 periods of 20 ms = 5 s; device buffers are well under a second).
    """

    def __init__(
        self,
        channels: Sequence[SourceChannel],
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
        self.periods = 0
        """Periods recorded since the engine started."""
        self.latency_samples = 0
        """Mixer samples between the mix and the speaker (set when the device opens)."""
        self.device_pos = 0
        """Mixer samples that have reached the speaker."""

    def record_period(self) -> None:
        """Note what each source contributed to the period just mixed; publish."""
        slot = self.periods % self._h
        for i, channel in enumerate(self._channels):
            self._starts[i][slot] = channel.pull_start
            self._offsets[i][slot] = channel.pull_offset
            self._counts[i][slot] = channel.pull_count
        self.periods += 1
        self._publish()

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
            start = self._starts[i][slot]
            played = start + min(max(into - self._offsets[i][slot], 0), self._counts[i][slot])
            if played > channel.played_pos:  # monotonic even if the latency estimate changes
                channel.played_pos = played


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
