"""The audiobooks skill against real ffmpeg, on books generated in the test.

The library holds: an m4b with tags and two chapters, an untagged FLAC
(lossless, so resumed samples can be compared exactly) and a two-file book
whose parts share an album tag.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import wave
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from huxley_sdk import AudioStream, CancelMedia, ContentType, SkillContext
from huxley_sdk.testing import MemoryStorage, ctx_recorder, make_test_context
from huxleyd.skills.audiobooks import BOOKMARK_PREFIX, SAVE_EVERY_S, AudiobooksSkill
from huxleyd.skills.media import CHUNK_BYTES, decode_command
from tests.fakes.audiobook_library import build_library, call, take
from tests.fakes.executables import counting_program

CHUNK_S = CHUNK_BYTES / 48_000


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("persona"))


def reference_pcm(path: Path) -> np.ndarray:
    """The whole file decoded by ffmpeg, as int16 samples at 24 kHz mono."""
    raw = subprocess.run(decode_command(str(path)), check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<i2")


async def started(
    data_dir: Path, storage: MemoryStorage | None = None, **config: Any
) -> tuple[AudiobooksSkill, SkillContext]:
    skill = AudiobooksSkill(save_every_s=config.pop("save_every_s", 5.0))
    ctx = make_test_context(
        name="audiobooks", persona_data_dir=data_dir, storage=storage, config=config
    )
    await skill.setup(ctx)
    return skill, ctx


async def drain(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in stream]


async def bookmark(ctx: SkillContext, book_id: str) -> dict[str, Any]:
    raw = await ctx.storage.get_setting(BOOKMARK_PREFIX + book_id)
    assert raw is not None
    data: dict[str, Any] = json.loads(raw)
    return data


def child_pids() -> set[int]:
    """Our live or unreaped child processes (zombies included), from /proc."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children = task / "children"
        if children.exists():
            found |= {int(p) for p in children.read_text().split()}
    return found


async def test_the_library_lists_books_from_tags_file_names_and_albums(data_dir: Path) -> None:
    skill, _ = await started(data_dir)
    listed, _ = await call(skill, "search_audiobooks")
    assert listed["count"] == 3
    assert [(b["title"], b["author"], b["progress"]) for b in listed["books"]] == [
        ("Saga", "Bo Bard", "not started"),
        ("the flac tale", None, "not started"),
        ("The Test Book", "Ann Author", "not started"),
    ]
    assert listed["books"][2]["length"] == "0:00:06"
    assert listed["books"][0]["length"] == "0:00:04"
    by_title, _ = await call(skill, "search_audiobooks", query="TEST")
    assert [b["title"] for b in by_title["books"]] == ["The Test Book"]
    by_author, _ = await call(skill, "search_audiobooks", query="bard")
    assert [b["title"] for b in by_author["books"]] == ["Saga"]
    nothing, _ = await call(skill, "search_audiobooks", query="war and peace")
    assert nothing["count"] == 0


async def test_a_missing_library_gets_a_clear_message(tmp_path: Path) -> None:
    skill, _ = await started(tmp_path, library="no/such/dir")
    for tool, args in (("search_audiobooks", {}), ("play_audiobook", {"title": "x"})):
        data, effect = await call(skill, tool, **args)
        assert data["error"] == "library_not_found"
        assert data["path"] == str(tmp_path / "no" / "such" / "dir")
        assert effect is None


async def test_play_streams_the_whole_book_with_earcons_and_marks_it_finished(
    data_dir: Path, tmp_path: Path
) -> None:
    sounds = tmp_path / "sounds"
    sounds.mkdir()
    earcon = (np.arange(1200) % 50 * 100).astype("<i2").tobytes()
    with wave.open(str(sounds / "book_start.wav"), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(24000)
        wav.writeframes(earcon)
    skill, ctx = await started(tmp_path, library=str(data_dir / "audiobooks"))
    data, effect = await call(skill, "play_audiobook", title="the flac tale")
    assert data["playing"] == "the flac tale"
    assert (data["from"], data["resumed"]) == ("0:00:00", False)
    assert isinstance(effect, AudioStream)
    assert effect.content_type is ContentType.NONMIXABLE
    assert effect.patience == timedelta(minutes=30)
    assert effect.label == "the flac tale"
    assert effect.on_complete_prompt is not None and "finished" in effect.on_complete_prompt
    chunks = await drain(effect.factory())
    assert chunks[0] == earcon  # book_start present; book_end absent: skipped silently
    pcm = b"".join(chunks[1:])
    assert pcm == reference_pcm(data_dir / "audiobooks" / "the_flac_tale.flac").tobytes()
    assert all(len(c) == CHUNK_BYTES for c in chunks[1:-1])
    assert await bookmark(ctx, "the_flac_tale.flac") == {"position_s": 0.0, "finished": True}
    assert child_pids() == set()


async def test_interrupt_keeps_the_position_streamed_and_resume_plays_from_it(
    data_dir: Path,
) -> None:
    storage = MemoryStorage()
    skill, ctx = await started(data_dir, storage)
    _, effect = await call(skill, "play_audiobook", title="flac tale")
    stream = effect.factory()
    await take(stream, 12)
    assert child_pids() != set()  # ffmpeg is running
    await stream.aclose()  # the runtime interrupts: the iterator is closed
    assert child_pids() == set()  # ffmpeg terminated and reaped
    mark = await bookmark(ctx, "the_flac_tale.flac")
    assert mark["finished"] is False
    assert abs(mark["position_s"] - 12 * CHUNK_S) <= CHUNK_S

    # A restart: a new skill on the same storage resumes at the bookmark.
    skill2, _ = await started(data_dir, storage)
    data, effect2 = await call(skill2, "play_audiobook", title="flac tale")
    assert (data["from"], data["resumed"]) == ("0:00:01", True)
    resumed = np.frombuffer(b"".join(await drain(effect2.factory())), dtype="<i2")
    reference = reference_pcm(data_dir / "audiobooks" / "the_flac_tale.flac")
    offset = round(mark["position_s"] * 24000)
    assert len(resumed) == len(reference) - offset
    assert np.array_equal(resumed[:4800], reference[offset : offset + 4800])


async def test_the_bookmark_is_saved_while_playing(data_dir: Path) -> None:
    skill, ctx = await started(data_dir, save_every_s=1.0)
    _, effect = await call(skill, "play_audiobook", title="flac tale", from_start=True)
    stream = effect.factory()
    await take(stream, 25)  # 2.5 s streamed, the stream still open (no finally yet)
    mark = await bookmark(ctx, "the_flac_tale.flac")
    assert 1.0 <= mark["position_s"] <= 2.5
    await stream.aclose()


class SlowCard(MemoryStorage):
    """Skill storage that records each bookmark written; a write waits on ``gate``
    while it is closed (a worn SD card taking its time over an fsync)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.positions: list[float] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.writing = asyncio.Event()
        """Set when a write begins."""

    async def set_setting(self, key: str, value: str) -> None:
        self.in_flight += 1
        self.writing.set()
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
            await super().set_setting(key, value)
            if key.startswith(BOOKMARK_PREFIX):
                self.positions.append(json.loads(value)["position_s"])
        finally:
            self.in_flight -= 1


async def test_the_default_cadence_keeps_a_power_cut_within_half_a_second(data_dir: Path) -> None:
    card = SlowCard()
    skill = AudiobooksSkill()  # the daemon's own cadence
    ctx = make_test_context(name="audiobooks", persona_data_dir=data_dir, storage=card)
    await skill.setup(ctx)
    _, effect = await call(skill, "play_audiobook", title="flac tale", from_start=True)
    stream = effect.factory()
    for _ in range(30):  # 3 s handed to the runtime, the stream still open
        await anext(stream)
        # The runtime waits for the speaker after each chunk (the loop runs
        # then): the save a chunk started gets its turn, as in the daemon.
        await asyncio.sleep(0)
    saved = list(card.positions)
    # At every moment the last save is at most one cadence (+ a chunk) behind.
    steps = [b - a for a, b in zip([0.0, *saved], [*saved, 3.0], strict=True)]
    assert SAVE_EVERY_S == 0.5 and max(steps) <= SAVE_EVERY_S + CHUNK_S + 1e-9, saved
    await stream.aclose()
    assert card.positions[-1] == pytest.approx(3.0)  # the final save, last


async def test_a_slow_card_delays_the_bookmark_never_the_book(data_dir: Path) -> None:
    card = SlowCard()
    skill = AudiobooksSkill(save_every_s=SAVE_EVERY_S)
    ctx = make_test_context(name="audiobooks", persona_data_dir=data_dir, storage=card)
    await skill.setup(ctx)
    _, effect = await call(skill, "play_audiobook", title="flac tale", from_start=True)
    async with contextlib.aclosing(effect.factory()) as stream:
        await take(stream, 2)
        card.gate.clear()  # the card stalls
        taking = asyncio.ensure_future(take(stream, 20))
        # A safety net, not a timing (under the 60 s test limit): with a save in the
        # sound's path this never returns.
        await asyncio.wait({taking}, timeout=20)
        stalled = not taking.done()
        card.gate.set()
        pcm = await taking
        assert not stalled, "the book waited for the bookmark's write"
        assert len(pcm) == 20 * CHUNK_BYTES
        assert card.most_in_flight == 1  # one save waits; the others were not queued up
    # The stalled save (of 0.5 s) landed before the final one, never after it.
    assert card.positions[-1] == pytest.approx(2.2) and card.positions[-2] < 2.2
    assert (await bookmark(ctx, "the_flac_tale.flac"))["position_s"] == pytest.approx(2.2)


async def test_seek_plays_from_the_new_place_and_the_superseded_stream_keeps_quiet(
    data_dir: Path,
) -> None:
    skill, ctx = await started(data_dir)
    _, effect = await call(skill, "play_audiobook", title="flac tale", from_start=True)
    old = effect.factory()
    await take(old, 10)
    data, effect2 = await call(skill, "seek_audiobook", seconds=3)
    assert data["from"] == "0:00:04"
    new = effect2.factory()
    first = await take(new, 5)  # the new stream starts before the old one is closed
    await old.aclose()
    # Superseded: the old stream must not write its stale 1.0 s over the new place.
    assert await ctx.storage.get_setting(BOOKMARK_PREFIX + "the_flac_tale.flac") is None
    reference = reference_pcm(data_dir / "audiobooks" / "the_flac_tale.flac")
    start = round(4.0 * 24000)
    assert first == reference[start : start + len(first) // 2].tobytes()
    back, _ = await call(skill, "seek_audiobook", seconds=-1)
    assert back["from"] == "0:00:03"  # 4.5 s now, back 1 s
    await new.aclose()
    assert (await bookmark(ctx, "the_flac_tale.flac"))["position_s"] == pytest.approx(4.5)
    past, effect3 = await call(skill, "seek_audiobook", seconds=60)
    assert (past["error"], effect3) == ("past_end", None)
    start_over, _ = await call(skill, "seek_audiobook", seconds=-600)
    assert start_over["from"] == "0:00:00"


async def test_chapters_status_and_chapter_jumps(data_dir: Path) -> None:
    skill, _ = await started(data_dir)
    _, effect = await call(skill, "play_audiobook", title="the test book")
    stream = effect.factory()
    await take(stream, 10)
    status, _ = await call(skill, "audiobook_status")
    assert status == {
        "playing": True,
        "book": "The Test Book",
        "author": "Ann Author",
        "position": "0:00:01",
        "length": "0:00:06",
        "chapter": "Chapter One",
        "chapter_number": 1,
        "chapters": 2,
    }
    data, effect2 = await call(skill, "audiobook_chapter", direction="next")
    assert (data["from"], data["chapter"]) == ("0:00:03", "Chapter Two")
    await stream.aclose()
    tail = b"".join(await drain(effect2.factory()))
    assert abs(len(tail) / 48000 - 3.0) < 0.1  # from 3 s to the end of a 6 s book
    status, _ = await call(skill, "audiobook_status")
    assert (status["playing"], status["book"], status["position"]) == (
        False,
        "The Test Book",
        "0:00:00",
    )
    data, _ = await call(skill, "audiobook_chapter", number=2)
    assert data["chapter"] == "Chapter Two"
    data, _ = await call(skill, "audiobook_chapter", number=3)
    assert (data["error"], data["chapters"]) == ("no_such_chapter", 2)


async def test_a_book_in_parts_plays_across_files_and_bookmarks_across_them(
    data_dir: Path,
) -> None:
    skill, ctx = await started(data_dir)
    data, effect = await call(skill, "play_audiobook", title="saga")
    assert (data["playing"], data["chapter"], data["length"]) == ("Saga", "Departure", "0:00:04")
    assert len(b"".join(await drain(effect.factory()))) == 4 * 48000
    data, effect = await call(skill, "audiobook_chapter", number=2)
    assert (data["from"], data["chapter"]) == ("0:00:02", "Return")
    stream = effect.factory()
    await take(stream, 5)
    await stream.aclose()
    mark = await bookmark(ctx, "Saga#Saga")
    assert mark["position_s"] == pytest.approx(2.5)
    data, effect = await call(skill, "seek_audiobook", seconds=-1.5)
    assert data["from"] == "0:00:01"
    tail = b"".join(await drain(effect.factory()))
    assert len(tail) == 3 * 48000  # 1 s of part one, then all of part two


async def test_choosing_a_book_reports_what_went_wrong(data_dir: Path) -> None:
    skill, _ = await started(data_dir)
    for tool, args, error in (
        ("play_audiobook", {}, "nothing_played"),
        ("play_audiobook", {"title": "moby dick"}, "no_such_book"),
        ("pause_audiobook", {}, "not_playing"),
        ("seek_audiobook", {"seconds": 10}, "nothing_played"),
    ):
        data, effect = await call(skill, tool, **args)
        assert (data["error"], effect) == (error, None)
    data, _ = await call(skill, "play_audiobook", title="moby dick")
    assert "The Test Book" in data["titles"]
    data, _ = await call(skill, "play_audiobook", title="the")
    assert data["error"] == "ambiguous"
    assert set(data["candidates"]) == {"The Test Book", "the flac tale"}


async def test_pause_cancels_the_media_and_the_stream_keeps_the_place(data_dir: Path) -> None:
    skill, ctx = await started(data_dir)
    _, effect = await call(skill, "play_audiobook", title="flac tale", from_start=True)
    stream = cast(AsyncGenerator[bytes, None], effect.factory())
    await take(stream, 20)
    data, effect2 = await call(skill, "pause_audiobook")
    assert data == {"paused": "the flac tale", "at": "0:00:02"}
    assert isinstance(effect2, CancelMedia)
    await stream.aclose()  # what the runtime does on CancelMedia
    assert (await bookmark(ctx, "the_flac_tale.flac"))["position_s"] == pytest.approx(2.0)
    data, effect3 = await call(skill, "play_audiobook")  # "continue my book"
    assert (data["playing"], data["from"]) == ("the flac tale", "0:00:02")
    assert isinstance(effect3, AudioStream)


async def test_a_finished_book_starts_over(data_dir: Path) -> None:
    skill, ctx = await started(data_dir)
    await ctx.storage.set_setting(
        BOOKMARK_PREFIX + "the_flac_tale.flac", json.dumps({"position_s": 0, "finished": True})
    )
    listed, _ = await call(skill, "search_audiobooks", query="flac")
    assert listed["books"][0]["progress"] == "finished"
    data, _ = await call(skill, "play_audiobook", title="flac")
    assert (data["from"], data["resumed"]) == ("0:00:00", False)


async def test_the_library_is_probed_at_start_and_then_only_for_changes(
    data_dir: Path, tmp_path: Path
) -> None:
    ffprobe = counting_program(tmp_path, "ffprobe")
    skill, ctx = await started(data_dir, ffprobe=ffprobe.path)
    [scan] = ctx_recorder(ctx).tasks
    await asyncio.wait_for(scan.task, 10)
    assert ffprobe.starts == 4  # every file once, in the background
    listed, _ = await call(skill, "search_audiobooks")
    assert listed["count"] == 3
    assert ffprobe.starts == 4  # nothing changed: all from the cache


async def test_resume_right_after_pause_starts_where_it_paused_while_the_card_writes(
    data_dir: Path,
) -> None:
    """The final bookmark is still being written (a slow card) when "resume" comes."""
    card = SlowCard()
    skill = AudiobooksSkill(save_every_s=5.0)  # no save while playing: storage has none
    ctx = make_test_context(name="audiobooks", persona_data_dir=data_dir, storage=card)
    await skill.setup(ctx)
    _, effect = await call(skill, "play_audiobook", title="flac tale", from_start=True)
    stream = cast(AsyncGenerator[bytes, None], effect.factory())
    await take(stream, 30)  # 3 s handed to the runtime
    await call(skill, "pause_audiobook")
    card.gate.clear()
    card.writing.clear()
    closing = asyncio.ensure_future(stream.aclose())  # the runtime's CancelMedia
    await card.writing.wait()  # the final bookmark's write has begun, and waits
    data, _ = await call(skill, "play_audiobook")  # "resume"
    status, _ = await call(skill, "audiobook_status")
    card.gate.set()
    await closing
    assert (data["from"], data["resumed"]) == ("0:00:03", True)
    assert (status["playing"], status["position"]) == (False, "0:00:03")
    assert (await bookmark(ctx, "the_flac_tale.flac"))["position_s"] == pytest.approx(3.0)
