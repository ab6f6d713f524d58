"""Long-form audio (AudioStream) on the ``content`` source, under focus.

Who owns the speaker is decided by the :class:`~huxleyd.turns.focus.FocusManager`
(the Huxley/AVS model): dialog (PTT held, the model speaking) on DIALOG, an
input claim on COMMS, the stream on CONTENT. The runner turns the focus
manager's verdicts into mixer actions for the stream it plays: MAY_DUCK →
duck (MIXABLE), MUST_PAUSE → pause where it is (NONMIXABLE), PRIMARY →
unduck/resume, MUST_STOP → stop. Patience (how long a preempted stream may
wait before it is evicted, with ``on_patience_expired`` awaited first) is
the focus manager's.

The coordinator calls :meth:`dialog_started` / :meth:`dialog_ended`,
:meth:`claim_started` / :meth:`claim_ended`, :meth:`start`, :meth:`stop`.
These never await, and neither do the focus requests they make: the
stream's activity carries the ``content`` source, so the focus manager
ducks or pauses it inside the very call that changed focus (a press ducks
the radio before ``dialog_started`` returns). The runner only follows the
verdict for its own state (MUST_STOP ends the stream).

The skill's iterator is always closed (``aclose``) when the stream stops
for any reason, so its ``finally`` — where bookmarks are written — runs.
A stopped stream stops *playing* at once (:attr:`MediaRunner.playing` is
false, the source flushed), but that ``finally`` may still be writing:
:meth:`MediaRunner.settled` and :meth:`MediaRunner.close` wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from huxley_sdk import AudioStream
from huxleyd.logs import get_logger
from huxleyd.turns.focus import Channel, FocusClaimant, FocusManager, FocusState, MixingBehavior
from huxleyd.turns.ports import AudioPort, SourcePort

log = get_logger("huxleyd.turns")

LOOKAHEAD_MS = 200
"""How far ahead of the speaker a stream is read. A skill bookmarks what it
has yielded, so this (plus one of its chunks) bounds how far a bookmark can
run ahead of what was heard; it still covers the device buffer and a short
stall of the loop."""


class _Playing:
    """One stream being played: its focus activity, its task, its mixer state."""

    def __init__(self, stream: AudioStream) -> None:
        self.stream = stream
        self.task: asyncio.Task[None] | None = None
        self.activity: FocusClaimant | None = None
        self.behavior = MixingBehavior.PRIMARY


class MediaRunner:
    """At most one AudioStream at a time, its focus, and the dialog/claim focus."""

    def __init__(
        self,
        audio: AudioPort,
        *,
        on_natural_end: Callable[[AudioStream], None],
        on_failed: Callable[[AudioStream], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        focus: FocusManager | None = None,
    ) -> None:
        self._audio = audio
        self._on_natural_end = on_natural_end
        self._on_failed = on_failed or (lambda stream: None)
        self.focus = focus or FocusManager(sleep=sleep)
        self._dialog = FocusClaimant("dialog", Channel.DIALOG)
        self._claim = FocusClaimant("claim", Channel.COMMS)
        self._holding: set[FocusClaimant] = set()
        self._current: _Playing | None = None
        self._ending: set[asyncio.Task[None]] = set()
        """Tasks of streams stopped or replaced whose skill ``finally`` still runs."""
        self._content = audio.source("content")
        """The source streams play on; the focus manager ducks and pauses it directly."""

    def open(self) -> None:
        self.focus.start()

    async def close(self) -> None:
        await self.stop(reason="shutdown")
        await self._ended()  # a replaced or evicted stream's bookmark, before the loop ends
        await self.focus.close()

    # ------------------------------------------------------------ state

    @property
    def stream(self) -> AudioStream | None:
        return self._current.stream if self.playing and self._current else None

    @property
    def playing(self) -> bool:
        current = self._current
        return current is not None and current.task is not None and not current.task.done()

    @property
    def in_background(self) -> bool:
        """Ducked or paused under dialog or a claim."""
        current = self._current
        return current is not None and current.behavior is not MixingBehavior.PRIMARY

    @property
    def label(self) -> str | None:
        stream = self.stream
        return (stream.label or "audio") if stream is not None else None

    # ------------------------------------------------------------ focus requests

    async def settled(self) -> None:
        """Wait until patience callbacks in flight and their evictions are done, and
        every stopped stream's ``finally`` has run (tests, shutdown)."""
        await self.focus.drain()
        await self._ended()

    async def _ended(self) -> None:
        while self._ending:
            await asyncio.wait(set(self._ending))

    def dialog_started(self) -> None:
        self._hold(self._dialog)

    def dialog_ended(self) -> None:
        self._let_go(self._dialog)

    def claim_started(self) -> None:
        self._hold(self._claim)

    def claim_ended(self) -> None:
        self._let_go(self._claim)

    def _hold(self, activity: FocusClaimant) -> None:
        if activity not in self._holding:
            self._holding.add(activity)
            self.focus.acquire(activity)

    def _let_go(self, activity: FocusClaimant) -> None:
        if activity in self._holding:
            self._holding.discard(activity)
            self.focus.release(activity)

    # ------------------------------------------------------------ streams

    def start(self, stream: AudioStream) -> None:
        """Play ``stream``, replacing any current one (whose finally runs)."""
        self._end_current()
        playing = _Playing(stream)
        playing.activity = FocusClaimant(
            stream.label or "audio",
            Channel.CONTENT,
            on_focus_changed=lambda state, behavior: self._on_focus(playing, state, behavior),
            content_type=stream.content_type,
            patience=stream.patience,
            on_patience_expired=stream.on_patience_expired,
            source=self._content,
        )
        self._current = playing
        playing.task = asyncio.get_running_loop().create_task(self._play(playing), name="media")
        self.focus.acquire(playing.activity)  # ducked or paused now if dialog holds the speaker
        log.info("media_started", label=stream.label, content_type=stream.content_type.value)

    async def stop(self, *, reason: str = "stopped") -> bool:
        """Stop gracefully (CancelMedia). Returns whether something was playing."""
        current = self._current
        if current is None or current.task is None or current.task.done():
            return False
        task = current.task
        self._end_current()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        log.info("media_stopped", reason=reason)
        return True

    def _end_current(self) -> None:
        current, self._current = self._current, None
        if current is None:
            return
        if current.task is not None and not current.task.done():
            current.task.cancel()
            self._ending.add(current.task)
            current.task.add_done_callback(self._ending.discard)
        self._content.flush()
        self._let_go_of(current)

    def _let_go_of(self, playing: _Playing) -> None:
        """Release the stream's focus: the focus manager unducks or resumes the source."""
        playing.behavior = MixingBehavior.PRIMARY
        if playing.activity is not None:
            self.focus.release(playing.activity)

    def _on_focus(self, playing: _Playing, state: FocusState, behavior: MixingBehavior) -> None:
        """The focus manager's verdict for one stream (the mixer already follows it)."""
        if playing is not self._current:
            return  # a stream already replaced or stopped
        if behavior is MixingBehavior.MUST_STOP or state is FocusState.NONE:
            log.info("media_evicted", label=playing.stream.label)
            self._end_current()
            return
        playing.behavior = behavior

    async def _play(self, playing: _Playing) -> None:
        stream = playing.stream
        iterator = stream.factory()
        content = self._content
        natural = False
        try:
            async for chunk in iterator:
                if chunk:
                    await content.write(chunk)
                    await _keep_lookahead(content)
            await content.drained()
            natural = True
        except Exception as exc:  # the skill's stream broke: say so, never stay "media"
            log.error("media_failed", label=stream.label, error=f"{type(exc).__name__}: {exc}")
            if playing is self._current:
                self._current = None
                self._content.flush()
                self._let_go_of(playing)
                self._on_failed(stream)
        finally:
            # Close the skill's generator here, not at garbage collection, so
            # its finally (the bookmark) runs now, also when we were cancelled.
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(aclose())
        if natural and playing is self._current:
            self._current = None
            self._let_go_of(playing)
            log.info("media_finished", label=stream.label)
            self._on_natural_end(stream)


async def _keep_lookahead(source: SourcePort) -> None:
    """Wait until at most :data:`LOOKAHEAD_MS` of ``source`` is unheard.

    Without it the runtime would read a stream as far ahead as the content
    ring holds (seconds): an interrupted book would be bookmarked seconds
    past what was heard, or marked finished.
    """
    await source.wait_played(source.write_pos - LOOKAHEAD_MS * 24)  # 24 samples per ms
