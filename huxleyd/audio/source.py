"""A playback source, the port the turn layer plays through: write PCM, control
it (duck, pause, flush, gain), ask what was played, wait for the end.

Get one with ``engine.source("speech")`` (or ``"earcon"``, ``"content"``,
``"comms"``) and hand it to whoever plays on it: every per-source operation
lives here, the engine keeps only what spans sources (the earcon gate, the
master gain). One source has one ring; writers are serialised by an asyncio
lock (never shared with the audio thread), so several tasks may write.

Bound and policy: the ring holds ``audio.<name>_ring_ms``; :meth:`write`
copies what fits and *waits* for room (the thread wakes it as it plays),
never dropping audio and never blocking the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from huxleyd.audio.channel import SourceChannel
from huxleyd.audio.playout import PlayoutTracker
from huxleyd.audio.ring import AsyncWaker
from huxleyd.audio.types import SOURCES
from huxleyd.errors import AudioError
from huxleyd.pcm import db_to_gain, pcm16_view, samples_to_ms

CutOutput = Callable[[], Sequence[int] | None]
"""Fade the device's output out now; each source's ring position at the fade's end
(``None``: the output has no cut, e.g. a blocking backend or a lost device)."""


class PlaybackSource:
    """The port of one mixer source: producing, controls, playout (asyncio only).

    ``cut_output`` (from the engine) fades a timed output out at a flush; without
    it a flush is the mixer's ramp alone.
    """

    def __init__(
        self,
        channel: SourceChannel,
        *,
        is_closed: Callable[[], bool],
        cut_output: CutOutput | None = None,
    ) -> None:
        self.name = channel.name
        self._index = SOURCES.index(channel.name)
        self._channel = channel
        self._ring = channel.ring
        self.room = AsyncWaker()
        """Notified by the audio thread after it consumed samples."""
        self.progress = AsyncWaker()
        """Notified by the audio thread when ``played_pos`` reaches the drain target."""
        self._playout = PlayoutTracker(channel.playout)
        self._ledger = self._playout.ledger
        self._lock = asyncio.Lock()
        self._is_closed = is_closed
        self._cut_output = cut_output
        self._epoch = 0
        self._last_item: str | None = None
        self._dry_seen = 0
        self.gaps = 0
        """Times this source ran dry inside an item that then continued (an audible gap)."""

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
        """Milliseconds of ``item_id`` heard at the speaker (0 if unknown): the
        ``audio_end_ms`` a truncate sends on barge-in."""
        return samples_to_ms(self._playout.played_samples(item_id))

    def queued_ms(self) -> int:
        """Milliseconds written but not yet heard (in the ring or on the way to the speaker)."""
        return samples_to_ms(self._playout.unheard(self._ring.write_pos))

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
        return self._ring.available() == 0 and self._playout.heard(self._ring.write_pos)

    async def drained(self) -> None:
        """Return once everything written so far has been heard (or flushed).

        Waiting for the end says the audio ends here: the playout buffer (the C
        feeder's) plays a start it still holds at once, and counts running dry here
        as the end, not as a late source. Raises :class:`AudioError` if the engine
        closes first.
        """
        self._ring.mark_end()
        await self.wait_played(self._ring.write_pos)

    async def wait_played(self, position: int) -> None:
        """Return once the ring position ``position`` has reached the speaker."""
        playout = self._playout
        if playout.heard(position):
            return
        playout.add_target(position)
        try:
            await self.progress.wait_for(lambda: playout.heard(position) or self._is_closed())
        finally:
            playout.remove_target(position)
        if not playout.heard(position):
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
        """Lower this source by ``audio.duck_depth_db`` (attack/release ramps)."""
        self._channel.req_ducked = True

    def unduck(self) -> None:
        self._channel.req_ducked = False

    def pause(self) -> None:
        """Fade out and stop pulling; the queue and the position are kept."""
        self._channel.req_paused = True

    def resume(self) -> None:
        self._channel.req_paused = False

    def set_gain(self, gain_db: float) -> None:
        """A per-source trim (ramped); unrelated to ducking and to the user's volume."""
        self._channel.req_gain = db_to_gain(gain_db)

    def flush(self) -> None:
        """Drop everything queued now (ramped ≥ 5 ms); later writes play normally (barge-in).

        A :meth:`write` waiting for room gives up on the rest of its PCM. With a
        timed output (the C callback) the speaker itself fades out within its
        next short period, and what this source had mixed ahead counts as heard
        up to the fade's end exactly (``played_ms`` for the truncate).
        """
        self._ledger.sync()  # cuts of earlier flushes first: the log is bounded
        self._epoch += 1
        self._channel.req_flush_to = self._ring.write_pos
        self._channel.req_flush_seq += 1  # publish after the target
        self.room.notify()
        if self._cut_output is not None:  # after the request: the thread sees both
            positions = self._cut_output()
            if positions is not None:
                self._playout.heard_floor = positions[self._index]

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
