"""Model speech on its way to the speaker, and what of it was really heard.

Audio chunks arrive from the provider faster than real time; the engine's
speech ring takes them with backpressure. :class:`SpeechOutput` keeps the
coordinator from ever awaiting that backpressure: chunks go into a queue
and one writer task feeds the engine. On barge-in :meth:`~SpeechOutput.cut`
empties the queue, cancels the write in progress, flushes the engine source
(a ramp of at most one period) and reports how much of the item the user heard.

**Bounds.** The queue holds at most ``max_queued_ms`` of audio
(:data:`MAX_QUEUED_MS` by default) in front of the engine's ring (60 s). A
chunk that does not fit is dropped together with the rest of its item (a
clean end rather than speech with holes), counted in
:attr:`~SpeechOutput.dropped_chunks` and logged once per item
(``speech_queue_full``); the next item is queued again. The queue is
emptied by every cut. Nothing else here grows: only the item being played
is remembered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from huxleyd.errors import AudioError
from huxleyd.logs import get_logger
from huxleyd.pcm import RATE_HZ, SAMPLE_BYTES
from huxleyd.turns.ports import AudioPort, SourcePort

log = get_logger("huxleyd.turns")

MAX_QUEUED_MS = 240_000
"""Speech that may wait in front of the engine's ring (4 minutes, 11.5 MB):
with the ring's 60 s, five minutes of one reply ahead of the speaker, far
more than a spoken answer; a provider streaming beyond it is cut there."""

BYTES_PER_MS = RATE_HZ * SAMPLE_BYTES // 1000


@dataclass(frozen=True, slots=True)
class HeardUpTo:
    """The assistant item being played when speech was cut, and how far."""

    item_id: str
    audio_end_ms: int


class SpeechOutput:
    """Queue model audio to the engine's ``speech`` source; cut it on demand.

    Call :meth:`start` on the running loop, :meth:`enqueue` per chunk,
    :meth:`played_out` at the terminal barrier, :meth:`cut` on barge-in and
    :meth:`close` at shutdown.
    """

    def __init__(self, audio: AudioPort, *, max_queued_ms: int = MAX_QUEUED_MS) -> None:
        self._audio = audio
        self._max_queued_bytes = max_queued_ms * BYTES_PER_MS
        self._queue: deque[tuple[str, bytes]] = deque()
        self._queued_bytes = 0
        self._wake = asyncio.Event()
        """Set while the queue has chunks for the writer."""
        self._writer: asyncio.Task[None] | None = None
        self._on_first_heard: Callable[[], None] | None = None
        self._first_heard: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._overflowed_item: str | None = None
        self.dropped_chunks = 0
        """Chunks dropped because the queue was full (each item's rest after the first)."""
        self.current_item_id: str | None = None
        """The last item whose audio was handed to the engine."""

    def start(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write_loop(), name="speech-writer"
            )

    async def close(self) -> None:
        self._cancel_first_heard()
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    @property
    def queued_ms(self) -> int:
        """Audio waiting in front of the engine's ring."""
        return self._queued_bytes // BYTES_PER_MS

    def enqueue(self, item_id: str, pcm: bytes) -> bool:
        """Hand one chunk of ``item_id`` to the speaker, in order.

        False: the queue was full, the chunk is dropped (see the module's bounds).
        """
        if item_id == self._overflowed_item or (
            self._queued_bytes + len(pcm) > self._max_queued_bytes
        ):
            self.dropped_chunks += 1
            if item_id != self._overflowed_item:
                self._overflowed_item = item_id
                log.warning("speech_queue_full", item=item_id, queued_ms=self.queued_ms)
            return False
        self._idle.clear()
        self._queue.append((item_id, pcm))
        self._queued_bytes += len(pcm)
        self._wake.set()
        return True

    @property
    def pending(self) -> bool:
        """Chunks are still waiting to be written to the engine."""
        return not self._idle.is_set()

    async def _write_loop(self) -> None:
        source = self._audio.source("speech")
        while True:
            await self._wake.wait()
            item_id, pcm = self._queue.popleft()
            self._queued_bytes -= len(pcm)
            if not self._queue:
                self._wake.clear()
            try:
                self.current_item_id = item_id
                if self._on_first_heard is not None:
                    callback, self._on_first_heard = self._on_first_heard, None
                    self._watch_first_heard(source, source.write_pos + 1, callback)
                await source.write(pcm, item_id=item_id)
            finally:
                if not self._queue:
                    self._idle.set()

    def arm_first_heard(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, when the first sample of the next chunk written
        has reached the speaker (the source's played position, not the hand-off)."""
        self._on_first_heard = callback

    def _watch_first_heard(
        self, source: SourcePort, position: int, callback: Callable[[], None]
    ) -> None:
        async def watch() -> None:
            with contextlib.suppress(AudioError):  # the engine closed first: never heard
                await source.wait_played(position)
                callback()

        self._cancel_first_heard()
        self._first_heard = asyncio.get_running_loop().create_task(
            watch(), name="speech-first-heard"
        )

    def _cancel_first_heard(self) -> None:
        self._on_first_heard = None
        if self._first_heard is not None:
            self._first_heard.cancel()
            self._first_heard = None

    async def played_out(self) -> None:
        """Return once every queued chunk has reached the speaker."""
        await self._idle.wait()
        await self._audio.source("speech").drained()

    def forget_item(self) -> None:
        """The turn is over: its last item is not "being played" any more, so a
        later cut has nothing to truncate."""
        self.current_item_id = None

    def cut(self) -> HeardUpTo | None:
        """Stop speech now. Returns what was heard of the item being played, if any."""
        self._queue.clear()
        self._queued_bytes = 0
        self._wake.clear()
        self._overflowed_item = None
        self._cancel_first_heard()  # what was cut is never heard; a flush is not playout
        if self._writer is not None:
            self._writer.cancel()
            self._writer = None
        self._idle.set()
        self._audio.source("speech").flush()
        self.start()
        item_id = self.current_item_id
        self.current_item_id = None
        if item_id is None:
            return None
        return HeardUpTo(item_id, max(0, self._audio.source("speech").played_ms(item_id)))
