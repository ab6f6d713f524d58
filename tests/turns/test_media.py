"""The media runner against a recording engine: the mixer follows focus at once.

The ducking decision is one call from the focus change to the source: a
press (``dialog_started``) ducks a MIXABLE stream before it returns, with no
task in between, and the end of the dialog unducks it the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

from huxley_sdk import AudioStream, ContentType
from huxleyd.turns.media import MediaRunner
from tests.fakes.turn_ports import RecordingAudio
from tests.turns import FakeSleeper, settle


def endless(gate: asyncio.Event) -> AudioStream:
    async def chunks() -> AsyncIterator[bytes]:
        while True:
            yield b"\0\0" * 240
            await gate.wait()  # one chunk, then wait: the test decides when it ends

    return AudioStream(factory=chunks, content_type=ContentType.MIXABLE, label="radio")


@asynccontextmanager
async def running(
    audio: RecordingAudio, sleeper: FakeSleeper | None = None
) -> AsyncIterator[MediaRunner]:
    sleep = (sleeper or FakeSleeper()).sleep
    media = MediaRunner(audio, on_natural_end=lambda s: None, sleep=sleep)
    media.open()
    try:
        yield media
    finally:
        await media.close()


def mixer_calls(audio: RecordingAudio) -> list[tuple[str, object]]:
    return [entry for entry in audio.log if entry[0] in ("duck", "unduck", "pause", "resume")]


async def test_a_press_ducks_the_stream_before_it_returns_and_its_end_unducks() -> None:
    audio = RecordingAudio()
    async with running(audio) as media:
        media.start(endless(asyncio.Event()))
        await settle()
        assert mixer_calls(audio) == []
        media.dialog_started()  # no await between the press and the mixer
        assert mixer_calls(audio) == [("duck", "content")]
        assert media.in_background
        media.dialog_ended()
        assert mixer_calls(audio) == [("duck", "content"), ("unduck", "content")]
        assert not media.in_background


async def test_a_stream_started_under_dialog_is_ducked_before_its_first_chunk() -> None:
    audio = RecordingAudio()
    async with running(audio) as media:
        media.dialog_started()
        media.start(endless(asyncio.Event()))
        assert mixer_calls(audio) == [("duck", "content")]
        await settle()
        first_write = audio.names().index("write:content")
        assert audio.names().index("duck") < first_write


async def test_stopping_a_ducked_stream_leaves_the_source_at_full_gain() -> None:
    audio = RecordingAudio()
    async with running(audio) as media:
        media.start(endless(asyncio.Event()))
        media.claim_started()
        assert await media.stop(reason="test") is True
        assert mixer_calls(audio) == [("duck", "content"), ("unduck", "content")]


async def test_a_nonmixable_stream_pauses_and_an_impatient_one_is_evicted_after_its_callback() -> (
    None
):
    sleeper = FakeSleeper()
    audio = RecordingAudio()
    events: list[str] = []

    async def expired() -> None:
        events.append("expired")

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while True:
                yield b"\0\0" * 240
                await asyncio.Event().wait()
        finally:
            events.append("finally")

    async with running(audio, sleeper) as media:
        stream = AudioStream(
            factory=chunks,
            label="book",
            patience=timedelta(seconds=2),
            on_patience_expired=expired,
        )
        media.start(stream)
        await settle()
        media.dialog_started()
        assert mixer_calls(audio) == [("pause", "content")]
        await sleeper.advance(2.0)
        await media.settled()
        await settle()
        assert events == ["expired", "finally"]
        assert not media.playing
        assert mixer_calls(audio) == [("pause", "content"), ("resume", "content")]
        names = audio.names()
        assert names.index("flush") < names.index("resume"), "flushed before it may play again"


class SlowFinally:
    """A book whose ``finally`` (its bookmark write) waits until the test lets it end."""

    def __init__(self) -> None:
        self.saving = asyncio.Event()
        self.release = asyncio.Event()
        self.saved = asyncio.Event()

    def stream(self) -> AudioStream:
        async def chunks() -> AsyncIterator[bytes]:
            try:
                while True:
                    yield b"\0\0" * 240
                    await asyncio.Event().wait()
            finally:
                self.saving.set()
                await self.release.wait()  # the write in flight
                self.saved.set()

        return AudioStream(factory=chunks, content_type=ContentType.NONMIXABLE, label="book")


async def test_a_stream_stopped_in_a_task_stops_playing_at_once_and_settled_waits_for_its_finally() -> (
    None
):
    """CancelMedia runs stop() in a task of its own: the stream stops playing at once,
    and what reads a bookmark after it must wait for settled()."""
    book = SlowFinally()
    async with running(RecordingAudio()) as media:
        media.start(book.stream())
        await settle()
        stopping = asyncio.create_task(media.stop(reason="cancel_media"))
        await book.saving.wait()
        assert not media.playing
        settled = asyncio.create_task(media.settled())
        await settle()
        assert not settled.done() and not book.saved.is_set()
        book.release.set()
        await settled
        assert book.saved.is_set()
        assert await stopping is True


async def test_settled_and_close_wait_for_a_replaced_streams_finally() -> None:
    """A stream replaced by another is stopped by no awaiting caller: settled() and
    close() (shutdown) still let its finally finish before they return."""
    book = SlowFinally()
    media = MediaRunner(RecordingAudio(), on_natural_end=lambda s: None, sleep=FakeSleeper().sleep)
    media.open()
    media.start(book.stream())
    await settle()
    media.start(endless(asyncio.Event()))
    await book.saving.wait()
    settled = asyncio.create_task(media.settled())
    closing = asyncio.create_task(media.close())
    await settle()
    assert not closing.done(), "shutdown must not end the loop under a bookmark write"
    assert not settled.done() and not book.saved.is_set()
    book.release.set()
    await asyncio.gather(settled, closing)
    assert book.saved.is_set()
