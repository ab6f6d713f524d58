"""Model speech on its way to the speaker, and what of it was really heard.

Audio chunks arrive from the provider faster than real time; the engine's
speech ring takes them with backpressure. :class:`SpeechOutput` keeps the
coordinator from ever awaiting that backpressure: chunks go into a queue
and one writer task feeds the engine. On barge-in :meth:`cut` empties the
queue, cancels the write in progress, flushes the engine source (a ramp of
at most one period) and reports how much of the item the user heard.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from huxleyd.turns.ports import AudioPort


@dataclass(frozen=True, slots=True)
class HeardUpTo:
    """The assistant item being played when speech was cut, and how far."""

    item_id: str
    audio_end_ms: int


class SpeechOutput:
    """Queue model audio to the engine's ``speech`` source; cut it on demand."""

    def __init__(
        self, audio: AudioPort, *, on_first_write: Callable[[], None] | None = None
    ) -> None:
        self._audio = audio
        self._queue: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._on_first_write = on_first_write
        self._idle = asyncio.Event()
        self._idle.set()
        self.current_item_id: str | None = None
        """The last item whose audio was handed to the engine."""
        self.items_written: list[str] = []

    def start(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write_loop(), name="speech-writer"
            )

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    def enqueue(self, item_id: str, pcm: bytes) -> None:
        """Hand one chunk of ``item_id`` to the speaker, in order."""
        self._idle.clear()
        self._queue.put_nowait((item_id, pcm))

    @property
    def pending(self) -> bool:
        """Chunks are still waiting to be written to the engine."""
        return not self._idle.is_set()

    async def _write_loop(self) -> None:
        source = self._audio.source("speech")
        while True:
            item_id, pcm = await self._queue.get()
            try:
                if item_id != self.current_item_id:
                    self.current_item_id = item_id
                    self.items_written.append(item_id)
                if self._on_first_write is not None:
                    callback, self._on_first_write = self._on_first_write, None
                    callback()
                await source.write(pcm, item_id=item_id)
            finally:
                if self._queue.empty():
                    self._idle.set()

    def arm_first_write(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once, when the next chunk is handed to the engine."""
        self._on_first_write = callback

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
        while not self._queue.empty():
            self._queue.get_nowait()
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
