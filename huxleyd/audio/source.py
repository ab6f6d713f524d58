"""The asyncio side of a playback source: write PCM, ask what was played, wait for the end.

Get one with ``engine.source("speech")`` (or ``"earcon"``, ``"content"``,
``"comms"``). One source has one ring; writers are serialised by an asyncio
lock (never shared with the audio thread), so several tasks may write.

Bound and policy: the ring holds ``audio.<name>_ring_ms``; :meth:`write`
copies what fits and *waits* for room (the thread wakes it as it plays),
never dropping audio and never blocking the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from huxleyd.audio.mixer import SourceChannel
from huxleyd.audio.pcm import db_to_gain, pcm16_view, samples_to_ms
from huxleyd.audio.playout import ItemLedger
from huxleyd.audio.ring import AsyncWaker
from huxleyd.errors import AudioError


class PlaybackSource:
    """Producer API and controls of one mixer source (asyncio only)."""

    def __init__(self, channel: SourceChannel, *, is_closed: Callable[[], bool]) -> None:
        self.name = channel.name
        self._channel = channel
        self._ring = channel.ring
        self.room = AsyncWaker()
        """Notified by the audio thread after it consumed samples."""
        self.progress = AsyncWaker()
        """Notified by the audio thread when ``played_pos`` reaches the drain target."""
        self._ledger = ItemLedger(channel.skips)
        self._lock = asyncio.Lock()
        self._is_closed = is_closed
        self._epoch = 0
        self._last_item: str | None = None
        self._dry_seen = 0
        self._targets: list[int] = []
        self.gaps = 0
        """Times this source ran dry inside an item that then continued (an audible gap)."""
        self.heard_floor = 0
        """A ring position known to be heard even before it reaches the DAC: where a
        cut's fade ends (set by the engine on a timed output)."""

    # -- producing -----------------------------------------------------------

    async def write(self, pcm: bytes, *, item_id: str | None = None) -> None:
        """Queue PCM16 24 kHz mono; wait while the ring is full.

        ``item_id`` tags the samples for :meth:`played_ms` (consecutive
        writes with the same id extend the item). A :meth:`flush` while this
        waits abandons the rest of ``pcm``.
        """
        samples = pcm16_view(pcm, what=f"audio source {self.name!r}")
        if samples.shape[0] == 0:
            return
        async with self._lock:
            self._check_open()
            epoch = self._epoch
            ring = self._ring
            start = ring.write_pos
            self._ledger.note_write(item_id, start, start + samples.shape[0])
            done = 0
            try:
                while True:
                    self._note_gap(item_id)  # also after waiting: the ring may have run dry
                    done += ring.write(samples[done:])
                    if done == samples.shape[0]:
                        return
                    await self.room.wait_for(
                        lambda: ring.free() > 0 or self._epoch != epoch or self._is_closed()
                    )
                    if self._epoch != epoch:
                        return
                    self._check_open()
            finally:
                if done < samples.shape[0]:
                    self._ledger.trim(item_id, start + done)

    def write_nowait(self, pcm: bytes, *, item_id: str | None = None) -> None:
        """Queue PCM at once, all of it, or raise :class:`AudioError` (nothing queued)."""
        samples = pcm16_view(pcm, what=f"audio source {self.name!r}")
        self._check_open()
        if self._lock.locked():
            raise AudioError(f"audio source {self.name!r}: a write() is waiting for room")
        if samples.shape[0] > self._ring.free():
            raise AudioError(
                f"audio source {self.name!r}: {samples_to_ms(samples.shape[0])} ms do not fit; "
                f"{samples_to_ms(self._ring.free())} ms free of "
                f"{samples_to_ms(self._ring.capacity)} ms"
            )
        self._note_gap(item_id)
        start = self._ring.write_pos
        self._ledger.note_write(item_id, start, start + samples.shape[0])
        self._ring.write(samples)

    # -- what has been played ------------------------------------------------

    def played_ms(self, item_id: str) -> int:
        """Milliseconds of ``item_id`` that have reached the speaker (0 if unknown)."""
        played = max(self._channel.played_pos, self.heard_floor)
        return samples_to_ms(self._ledger.played_samples(item_id, played))

    def queued_ms(self) -> int:
        """Milliseconds written but not yet heard (in the ring or on the way to the speaker)."""
        return samples_to_ms(max(0, self._ring.write_pos - self._channel.played_pos))

    def buffered_ms(self) -> int:
        """Milliseconds in the ring only (what a producer can still run ahead by)."""
        return samples_to_ms(self._ring.available())

    def high_water_ms(self) -> int:
        """The fullest the ring has been (at ``capacity_ms`` writers waited)."""
        return samples_to_ms(self._ring.high_water)

    @property
    def capacity_ms(self) -> int:
        return samples_to_ms(self._ring.capacity)

    def idle(self) -> bool:
        """Nothing queued and everything written has been heard (or flushed)."""
        return self._ring.available() == 0 and self._channel.played_pos >= self._ring.write_pos

    async def drained(self) -> None:
        """Return once everything written so far has been heard (or flushed).

        Raises :class:`AudioError` if the engine closes first.
        """
        await self.wait_played(self._ring.write_pos)

    async def wait_played(self, position: int) -> None:
        """Return once the ring position ``position`` has reached the speaker."""
        channel = self._channel
        if channel.played_pos >= position:
            return
        self._targets.append(position)
        self._publish_target()
        try:
            await self.progress.wait_for(
                lambda: channel.played_pos >= position or self._is_closed()
            )
        finally:
            self._targets.remove(position)
            self._publish_target()
        if channel.played_pos < position:
            raise AudioError(f"audio engine closed before {self.name!r} was played out")

    @property
    def channel(self) -> SourceChannel:
        """The audio-thread side (for the engine)."""
        return self._channel

    @property
    def write_pos(self) -> int:
        """Samples ever written to this source (a position for :meth:`wait_played`)."""
        return self._ring.write_pos

    # -- controls (picked up by the thread at the next period, then ramped) ---

    def duck(self) -> None:
        self._channel.req_ducked = True

    def unduck(self) -> None:
        self._channel.req_ducked = False

    def pause(self) -> None:
        self._channel.req_paused = True

    def resume(self) -> None:
        self._channel.req_paused = False

    def set_gain(self, gain_db: float) -> None:
        self._channel.req_gain = db_to_gain(gain_db)

    def flush(self) -> None:
        """Drop everything queued now (ramped ≥ 5 ms); later writes play normally.

        A :meth:`write` waiting for room gives up on the rest of its PCM.
        """
        self._ledger.sync()  # cuts of earlier flushes first: the log is bounded
        self._epoch += 1
        self._channel.req_flush_to = self._ring.write_pos
        self._channel.req_flush_seq += 1  # publish after the target
        self.room.notify()

    def close(self) -> None:
        self.room.close()
        self.progress.close()

    # -- internals -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._is_closed():
            raise AudioError(f"audio engine closed: cannot write to {self.name!r}")

    def _note_gap(self, item_id: str | None) -> None:
        dry = self._channel.dry_count
        if (
            item_id is not None
            and item_id == self._last_item
            and dry != self._dry_seen
            and self._ring.available() == 0
        ):
            self.gaps += 1
        self._dry_seen = dry
        self._last_item = item_id

    def _publish_target(self) -> None:
        self._channel.drain_target = min(self._targets) if self._targets else -1
