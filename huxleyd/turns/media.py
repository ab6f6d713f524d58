"""Long-form audio (AudioStream) on the ``content`` source.

The coordinator starts a stream at a turn's terminal barrier and tells the
runner when dialog takes the speaker (``dialog_started``) and gives it back
(``dialog_ended``). MIXABLE content ducks under dialog; NONMIXABLE content
pauses where it is. A preempted stream waits for its patience (NONMIXABLE
default 0, MIXABLE 5 minutes, or the stream's own) and is then evicted:
``on_patience_expired`` is awaited first, then the stream is closed.

The skill's iterator is always closed (``aclose``) when the stream stops
for any reason, so its ``finally`` — where bookmarks are written — runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

from huxley_sdk import AudioStream, ContentType
from huxleyd.logs import get_logger
from huxleyd.turns.ports import AudioPort

log = get_logger("huxleyd.turns")

DEFAULT_PATIENCE = {
    ContentType.NONMIXABLE: timedelta(0),
    ContentType.MIXABLE: timedelta(minutes=5),
}


def patience_of(stream: AudioStream) -> timedelta:
    return stream.patience if stream.patience is not None else DEFAULT_PATIENCE[stream.content_type]


class MediaRunner:
    """At most one AudioStream at a time."""

    def __init__(
        self,
        audio: AudioPort,
        *,
        on_natural_end: Callable[[AudioStream], None],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._audio = audio
        self._on_natural_end = on_natural_end
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        self._stream: AudioStream | None = None
        self._patience: asyncio.Task[None] | None = None
        self._in_background = False

    @property
    def stream(self) -> AudioStream | None:
        return self._stream

    @property
    def in_background(self) -> bool:
        """Ducked or paused under dialog."""
        return self._in_background

    @property
    def playing(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def label(self) -> str | None:
        return (self._stream.label or "audio") if self.playing and self._stream else None

    def start(self, stream: AudioStream) -> None:
        """Play ``stream`` now, replacing any current one (whose finally runs)."""
        self._cancel_current()
        self._stream = stream
        self._in_background = False
        self._task = asyncio.get_running_loop().create_task(self._play(stream), name="media")
        log.info("media_started", label=stream.label, content_type=stream.content_type.value)

    async def stop(self, *, reason: str = "stopped") -> bool:
        """Stop gracefully (CancelMedia). Returns whether something was playing."""
        task = self._task
        if task is None or task.done():
            return False
        self._cancel_current()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        log.info("media_stopped", reason=reason)
        return True

    def _cancel_current(self) -> None:
        if self._patience is not None:
            self._patience.cancel()
            self._patience = None
        if self._task is not None and not self._task.done():
            self._task.cancel()
        # Flush before un-pausing, so no stale audio slips out in between.
        self._audio.flush("content")
        if self._in_background and self._stream is not None:
            self._resume_mixer(self._stream)
        self._in_background = False

    async def _play(self, stream: AudioStream) -> None:
        iterator = stream.factory()
        content = self._audio.source("content")
        natural = False
        try:
            async for chunk in iterator:
                if chunk:
                    await content.write(chunk)
            await self._audio.drained("content")
            natural = True
        finally:
            # Close the skill's generator here, not at garbage collection, so
            # its finally (the bookmark) runs now, also when we were cancelled.
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(aclose())
        if natural:
            log.info("media_finished", label=stream.label)
            self._on_natural_end(stream)

    def dialog_started(self) -> None:
        """Dialog takes the speaker: duck or pause, and start the patience clock."""
        if not self.playing or self._stream is None or self._in_background:
            return
        stream = self._stream
        self._in_background = True
        if stream.content_type is ContentType.MIXABLE:
            self._audio.duck("content")
        else:
            self._audio.pause("content")
        self._patience = asyncio.get_running_loop().create_task(
            self._evict_after(stream, patience_of(stream)), name="media-patience"
        )

    def dialog_ended(self) -> None:
        """Dialog is over: the stream comes back where it was."""
        if not self._in_background or self._stream is None:
            return
        if self._patience is not None:
            self._patience.cancel()
            self._patience = None
        self._in_background = False
        if self.playing:
            self._resume_mixer(self._stream)

    def _resume_mixer(self, stream: AudioStream) -> None:
        if stream.content_type is ContentType.MIXABLE:
            self._audio.unduck("content")
        else:
            self._audio.resume("content")

    async def _evict_after(self, stream: AudioStream, patience: timedelta) -> None:
        seconds = patience.total_seconds()
        if seconds > 0:
            await self._sleep(seconds)
        if stream is not self._stream or not self.playing:
            return
        if stream.on_patience_expired is not None:
            try:
                await stream.on_patience_expired()
            except Exception:
                log.exception("media_patience_callback_failed", label=stream.label)
        self._patience = None  # we are that task: do not cancel ourselves
        log.info("media_evicted", label=stream.label, patience_s=seconds)
        task = self._task
        self._cancel_current()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
