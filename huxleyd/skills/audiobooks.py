# longer than 600 lines: one skill (library, bookmarks, playback, tools), written against huxley_sdk only like a third-party one
"""The audiobooks skill: a library directory played through ffmpeg, with bookmarks.

Config: ``library`` (a directory; relative to the persona data directory
unless absolute; default ``audiobooks``), optional ``ffmpeg``/``ffprobe``
binaries. Each audio file is a book, except that files of one directory
sharing an ``album`` tag form one book in parts (a CD rip, a LibriVox
download), ordered by disc, track and name. Titles come from the tags, else
the file name; chapters from the file's chapter metadata (m4b), else one per
part of a multi-file book.

Playback is an ``AudioStream`` (NONMIXABLE, patience 30 min) whose factory
decodes with ffmpeg from the start position. The bookmark — seconds into the
book — is what was really handed to the runtime (start + bytes yielded /
48,000). The runtime reads a stream at most its read-ahead (200 ms) plus
one chunk (100 ms) ahead of the speaker, so that is how far a bookmark can
run ahead of what was heard; the skill cannot see the speaker (the SDK
gives it none), and needs not to.

It is saved every ``save_every_s`` (0.5 s) of audio while playing, so a power
cut loses at most that much plus one commit (the database syncs every commit
to disk), and in the factory's ``finally`` for any end: a natural end marks
the book finished; an interrupt, stop, preemption or shutdown keeps the
position. A save while playing runs beside the stream, one at a time: a
slow card (an fsync can take a second on a worn SD card) delays the
bookmark, never the sound. A stream superseded by a newer one of the same
book (skip, chapter jump) does not overwrite the newer bookmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

from huxley_sdk import (
    BYTES_PER_SECOND,
    AudioStream,
    CancelMedia,
    ContentType,
    SkillContext,
    ToolDefinition,
    ToolResult,
)
from huxley_sdk.audio import read_each_sound

from .media import AUDIO_EXTENSIONS, MediaError, ProbeInfo, best_match, decode_pcm, probe, rank
from .support import require_ctx, tool_error

BOOKMARK_PREFIX = "bookmark:"
LAST_BOOK_KEY = "last_book"
EARCONS = ("book_start", "book_end")
PROBE_CONCURRENCY = 4
LIST_LIMIT = 25
SAVE_EVERY_S = 0.5
"""Bookmark cadence while playing: a power cut resumes within this (plus a commit)."""
RESTART_NEAR_END_S = 5.0
"""A bookmark this close to the end (at most 5% of the book) restarts the book."""


@dataclass(frozen=True, slots=True)
class Part:
    """One file of a book, placed at ``offset_s`` seconds into the book."""

    path: Path
    offset_s: float
    duration_s: float


@dataclass(frozen=True, slots=True)
class Chapter:
    title: str
    start_s: float
    """Seconds from the start of the book (not of the file)."""


@dataclass(frozen=True, slots=True)
class Book:
    id: str
    """Stable across rescans: the file's path in the library, or ``dir#album``."""
    title: str
    author: str | None
    parts: tuple[Part, ...]
    chapters: tuple[Chapter, ...] = ()

    @property
    def duration_s(self) -> float:
        last = self.parts[-1]
        return last.offset_s + last.duration_s

    def locate(self, position_s: float) -> tuple[int, float]:
        """``(part index, seconds into that part)`` for a position in the book."""
        for index, part in enumerate(self.parts):
            if position_s < part.offset_s + part.duration_s:
                return index, max(0.0, position_s - part.offset_s)
        last = len(self.parts) - 1
        return last, max(0.0, min(position_s, self.duration_s) - self.parts[last].offset_s)

    def chapter_index(self, position_s: float) -> int | None:
        """Index of the chapter playing at ``position_s``; None without chapters."""
        found = None
        for index, chapter in enumerate(self.chapters):
            if chapter.start_s <= position_s + 0.05:
                found = index
        return found if found is not None or not self.chapters else 0


def _natural_key(text: str) -> list[Any]:
    return [int(t) if t.isdigit() else t.casefold() for t in re.split(r"(\d+)", text)]


def _number(tag: str | None) -> int:
    match = re.match(r"\s*(\d+)", tag or "")
    return int(match.group(1)) if match else 0


def _author(info: ProbeInfo) -> str | None:
    return info.tag("album_artist", "artist", "author", "composer")


def _stem_title(path: Path) -> str:
    return " ".join(re.sub(r"[_]+", " ", path.stem).split())


def build_books(root: Path, infos: list[ProbeInfo]) -> list[Book]:
    """Group probed files into books (pure: the grouping rule of the module docstring)."""
    groups: dict[tuple[Path, str], list[ProbeInfo]] = {}
    singles: list[ProbeInfo] = []
    for info in infos:
        album = info.tag("album")
        if album:
            groups.setdefault((info.path.parent, album), []).append(info)
        else:
            singles.append(info)
    books: list[Book] = []
    for (folder, album), members in groups.items():
        if len(members) == 1:
            singles.append(members[0])
            continue
        members.sort(
            key=lambda i: (
                _number(i.tag("disc")),
                _number(i.tag("track")),
                _natural_key(i.path.name),
            )
        )
        parts: list[Part] = []
        chapters: list[Chapter] = []
        offset = 0.0
        for info in members:
            parts.append(Part(info.path, offset, info.duration_s))
            if info.chapters:
                chapters += [Chapter(c.title, offset + c.start_s) for c in info.chapters]
            else:
                chapters.append(Chapter(info.tag("title") or _stem_title(info.path), offset))
            offset += info.duration_s
        book_id = f"{folder.relative_to(root).as_posix()}#{album}"
        books.append(Book(book_id, album, _author(members[0]), tuple(parts), tuple(chapters)))
    for info in singles:
        title = info.tag("title", "album") or _stem_title(info.path)
        marks = tuple(Chapter(c.title, c.start_s) for c in info.chapters)
        part = Part(info.path, 0.0, info.duration_s)
        book_id = info.path.relative_to(root).as_posix()
        books.append(Book(book_id, title, _author(info), (part,), marks))
    books.sort(key=lambda b: _natural_key(b.title))
    return books


def _library_dir(ctx: SkillContext) -> Path:
    library = Path(str(ctx.config.get("library", "audiobooks"))).expanduser()
    return library if library.is_absolute() else ctx.persona_data_dir / library


def _audio_files(root: Path) -> list[tuple[Path, tuple[int, int]]]:
    """Audio files under ``root`` in natural order, with (mtime_ns, size) to detect changes."""
    found = []
    for path in sorted(root.rglob("*"), key=lambda p: _natural_key(str(p))):
        if path.suffix.lower() in AUDIO_EXTENSIONS and path.is_file():
            stat = path.stat()
            found.append((path, (stat.st_mtime_ns, stat.st_size)))
    return found


def _mark(at_s: float, finished: bool) -> tuple[float, bool]:
    """The bookmark of a stream at ``at_s``: a finished book starts over."""
    return (0.0 if finished else round(at_s, 3)), finished


def clock(seconds: float) -> str:
    """``H:MM:SS`` for a position or a duration."""
    total = max(0, int(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


class _Fail(Exception):
    """A user-fixable problem, reported to the model as a JSON error output."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


@dataclass(eq=False)
class _Session:
    """One run of a stream factory: where it started and how much it has yielded."""

    book: Book
    serial: int
    base_s: float
    """Book position of the current part's first yielded byte."""
    streamed_bytes: int = 0
    saved_s: float = 0.0
    save_failing: bool = False
    """The last bookmark save failed (logged once until one works again)."""
    saving: asyncio.Task[None] | None = None
    """The save in flight while playing (at most one: the next waits for it)."""

    @property
    def position_s(self) -> float:
        return self.base_s + self.streamed_bytes / BYTES_PER_SECOND


class AudiobooksSkill:
    """Lists, searches and plays audiobooks; keeps a bookmark per book."""

    name = "audiobooks"

    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "library": {"type": "string", "minLength": 1},
            "ffmpeg": {"type": "string", "minLength": 1},
            "ffprobe": {"type": "string", "minLength": 1},
            "timezone": {"type": "string"},
        },
        "additionalProperties": False,
    }
    """``[skills.audiobooks]`` of the persona; huxleyd checks it at load (a huxleyd extension)."""

    def __init__(self, *, save_every_s: float = SAVE_EVERY_S) -> None:
        self._save_every_s = save_every_s
        self._ctx: SkillContext | None = None
        self._root = Path()
        self._ffmpeg = "ffmpeg"
        self._ffprobe = "ffprobe"
        self._earcons: dict[str, bytes] = {}
        self._probes: dict[Path, tuple[tuple[int, int], ProbeInfo]] = {}
        self._scan_lock = asyncio.Lock()
        self._serials = itertools.count(1)
        self._latest: dict[str, int] = {}
        self._current: _Session | None = None
        self._stopping: dict[str, tuple[_Session, bool]] = {}
        """Per book, a stream that stopped and is still writing its final bookmark
        (and whether it finished): until that write lands, storage holds an older
        place, and "resume" right after "pause" must not start from it."""

    # longer than 50 lines: one table of the skill's tool definitions
    @property
    def tools(self) -> list[ToolDefinition]:
        empty: dict[str, Any] = {"type": "object", "properties": {}}
        return [
            ToolDefinition(
                "search_audiobooks",
                "List the audiobook library, or search it by title or author. "
                "Returns titles, authors, lengths and how far the user got.",
                {"type": "object", "properties": {"query": {"type": "string"}}},
            ),
            ToolDefinition(
                "play_audiobook",
                "Play an audiobook by title, resuming where the user stopped. Without "
                "a title, resumes the last book. from_start=true starts over.",
                {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "from_start": {"type": "boolean"},
                    },
                },
            ),
            ToolDefinition(
                "pause_audiobook",
                "Pause or stop the audiobook that is playing; the place is kept.",
                empty,
            ),
            ToolDefinition(
                "seek_audiobook",
                "Skip forward (positive) or back (negative) a number of seconds in the "
                "current or last audiobook, and play from there.",
                {
                    "type": "object",
                    "properties": {"seconds": {"type": "number"}},
                    "required": ["seconds"],
                },
            ),
            ToolDefinition(
                "audiobook_chapter",
                "Go to the next or previous chapter, restart the current one, or go to "
                "chapter number N, and play from there.",
                {
                    "type": "object",
                    "properties": {
                        "direction": {"type": "string", "enum": ["next", "previous", "restart"]},
                        "number": {"type": "integer", "minimum": 1},
                    },
                },
            ),
            ToolDefinition(
                "audiobook_status",
                "What audiobook is playing or was last played: title, position, chapter.",
                empty,
            ),
        ]

    async def setup(self, ctx: SkillContext) -> None:
        self._ctx = ctx
        self._root = _library_dir(ctx)
        self._ffmpeg = str(ctx.config.get("ffmpeg", "ffmpeg"))
        self._ffprobe = str(ctx.config.get("ffprobe", "ffprobe"))
        self._earcons = self._load_earcons(ctx.persona_data_dir / "sounds")
        if not self._root.is_dir():
            ctx.logger.warning("library_not_found", path=str(self._root))
            return
        # Probe the library now, in the background: on a Pi, probing a few
        # hundred files on the first tool call would outlast the tool timeout.
        ctx.background_task("audiobooks-scan", self._warm, restart_on_crash=False)

    async def _warm(self) -> None:
        with contextlib.suppress(_Fail):
            books = await self.library()
            require_ctx(self._ctx, self.name).logger.info("library_scanned", books=len(books))

    def _load_earcons(self, folder: Path) -> dict[str, bytes]:
        """Each of the book's sounds on its own: one that cannot be read is silent,
        the other plays (the daemon names it: the ``persona-sounds`` degraded part)."""
        loaded, broken = read_each_sound(folder, roles=EARCONS)
        for name, why in broken.items():
            require_ctx(self._ctx, self.name).logger.warning(
                "earcons_unreadable", file=str(folder / name), error=why
            )
        return loaded

    async def teardown(self) -> None:
        self._ctx = None

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "search_audiobooks": self._search,
            "play_audiobook": self._play,
            "pause_audiobook": self._pause,
            "seek_audiobook": self._seek,
            "audiobook_chapter": self._chapter,
            "audiobook_status": self._status,
        }
        if tool_name not in handlers:
            raise ValueError(f"audiobooks skill has no tool {tool_name!r}")
        try:
            result: ToolResult = await handlers[tool_name](args)
        except _Fail as fail:
            return tool_error(fail.code, fail.message, **fail.details)
        return result

    # -- library -------------------------------------------------------------

    async def library(self) -> list[Book]:
        """Scan the library (only new or changed files are probed again)."""
        if not self._root.is_dir():
            raise _Fail(
                "library_not_found",
                "the audiobook library folder does not exist; put books there",
                path=str(self._root),
            )
        # One scan at a time: a tool call during the start-up scan waits for
        # it and then finds every probe cached.
        async with self._scan_lock:
            # Walking a big library on an SD card blocks: keep it off the loop.
            files = await asyncio.to_thread(_audio_files, self._root)
            gate = asyncio.Semaphore(PROBE_CONCURRENCY)
            infos = await asyncio.gather(*(self._probe_cached(p, k, gate) for p, k in files))
        return build_books(self._root, [i for i in infos if i is not None])

    async def _probe_cached(
        self, path: Path, key: tuple[int, int], gate: asyncio.Semaphore
    ) -> ProbeInfo | None:
        cached = self._probes.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        async with gate:
            try:
                info = await probe(path, ffprobe=self._ffprobe)
            except MediaError as exc:
                require_ctx(self._ctx, self.name).logger.warning("book_unreadable", error=str(exc))
                return None
        self._probes[path] = (key, info)
        return info

    async def _bookmark(self, book: Book) -> tuple[float, bool]:
        stopping = self._stopping.get(book.id)
        if stopping is not None:
            session, finished = stopping
            return _mark(session.position_s, finished)
        raw = await require_ctx(self._ctx, self.name).storage.get_setting(BOOKMARK_PREFIX + book.id)
        if raw is None:
            return 0.0, False
        try:
            data = json.loads(raw)
            return float(data["position_s"]), bool(data.get("finished", False))
        except (ValueError, KeyError, TypeError):
            return 0.0, False

    def _save_while_playing(self, session: _Session) -> None:
        """Start a save of the position now, beside the stream, unless one is in flight."""
        if session.saving is not None and not session.saving.done():
            return  # the card is slow: the next chunk tries again
        if session.position_s - session.saved_s >= self._save_every_s:
            session.saving = asyncio.create_task(self._save(session, session.position_s))

    async def _save(self, session: _Session, at_s: float, *, finished: bool = False) -> None:
        if self._latest.get(session.book.id) != session.serial:
            return  # superseded by a newer stream of this book: its bookmark wins
        position, _ = _mark(at_s, finished)
        value = json.dumps({"position_s": position, "finished": finished})
        ctx = require_ctx(self._ctx, self.name)
        try:
            await ctx.storage.set_setting(BOOKMARK_PREFIX + session.book.id, value)
        except Exception as exc:  # a full disk, a read-only or broken database
            # The book plays on (the last saved bookmark stays); said once per
            # stream until a save works again, and tried again a period later.
            if not session.save_failing:
                ctx.logger.error(
                    "bookmark_save_failed",
                    book=session.book.id,
                    position_s=position,
                    error=f"{type(exc).__name__}: {exc}",
                )
            session.save_failing = True
            session.saved_s = at_s
            return
        if session.save_failing:
            ctx.logger.info("bookmark_save_recovered", book=session.book.id)
            session.save_failing = False
        session.saved_s = at_s

    async def _find(self, title: str) -> Book:
        books = await self.library()
        if not books:
            raise _Fail("library_empty", "the audiobook library has no books", path=str(self._root))
        items = [(b, (b.title, f"{b.title} {b.author or ''}", b.author or "")) for b in books]
        winner, tied = best_match(title, items)
        if winner is not None:
            return winner
        if tied:
            raise _Fail(
                "ambiguous",
                "several books match; ask which one",
                query=title,
                candidates=[b.title for b in tied],
            )
        raise _Fail(
            "no_such_book",
            "no book matches that title",
            query=title,
            titles=[b.title for b in books[:LIST_LIMIT]],
        )

    async def _last_book(self) -> Book:
        if self._current is not None:
            return self._current.book
        last_id = await require_ctx(self._ctx, self.name).storage.get_setting(LAST_BOOK_KEY)
        book = next((b for b in await self.library() if b.id == last_id), None)
        if book is None:
            raise _Fail("nothing_played", "no audiobook has been played yet; ask for a title")
        return book

    async def _position(self, book: Book) -> float:
        if self._current is not None and self._current.book.id == book.id:
            return self._current.position_s
        position, finished = await self._bookmark(book)
        return 0.0 if finished else position

    # -- streaming -----------------------------------------------------------

    def stream(self, book: Book, start_s: float, *, earcons: bool = True) -> AudioStream:
        """The AudioStream that plays ``book`` from ``start_s`` (what the play tools return)."""

        async def factory() -> AsyncIterator[bytes]:
            session, serial, ctx = await self._begin(book, start_s)
            finished = False
            try:
                if earcons and "book_start" in self._earcons:
                    yield self._earcons["book_start"]
                async with contextlib.aclosing(self._decode(session)) as pcm:
                    async for chunk in pcm:
                        session.streamed_bytes += len(chunk)
                        yield chunk
                        # Resumed: the runtime has taken the chunk and is at most its
                        # read-ahead behind it, so this position is (nearly) heard.
                        self._save_while_playing(session)
                finished = True
                if earcons and "book_end" in self._earcons:
                    yield self._earcons["book_end"]
            finally:
                if self._latest.get(book.id) == serial:
                    self._stopping[book.id] = (session, finished)
                if self._current is session:
                    self._current = None
                if session.saving is not None:
                    # Ordered: the final bookmark is written last, never overwritten
                    # by a save of an earlier position still in flight.
                    with contextlib.suppress(Exception):
                        await session.saving
                await self._save(session, session.position_s, finished=finished)
                if self._stopping.get(book.id, (None, False))[0] is session:
                    del self._stopping[book.id]
                ctx.logger.info(
                    "book_stopped",
                    book=book.id,
                    position_s=round(session.position_s, 1),
                    finished=finished,
                )

        return AudioStream(
            factory=factory,
            on_complete_prompt=(
                f"The audiobook '{book.title}' just finished. Tell the user the book "
                "finished and ask whether they want another one."
            ),
            completion_silence_ms=500,
            content_type=ContentType.NONMIXABLE,
            label=book.title,
            patience=timedelta(minutes=30),
        )

    async def _begin(self, book: Book, start_s: float) -> tuple[_Session, int, SkillContext]:
        """A stream of ``book`` starts playing: its session, now the current one,
        and the last book remembered (a full disk: the book plays all the same)."""
        serial = next(self._serials)
        session = _Session(book, serial, start_s, saved_s=start_s)
        self._latest[book.id] = serial
        self._current = session
        ctx = require_ctx(self._ctx, self.name)
        try:
            await ctx.storage.set_setting(LAST_BOOK_KEY, book.id)
        except Exception as exc:
            session.save_failing = True
            ctx.logger.error(
                "bookmark_save_failed", book=book.id, error=f"{type(exc).__name__}: {exc}"
            )
        ctx.logger.info("book_started", book=book.id, position_s=round(start_s, 1))
        return session, serial, ctx

    async def _decode(self, session: _Session) -> AsyncGenerator[bytes, None]:
        index, offset = session.book.locate(session.base_s)
        for part in session.book.parts[index:]:
            # Each part restarts the count at its place in the book, so a
            # file whose decoded length differs from its probed duration
            # does not drift the bookmark of the parts after it.
            session.base_s, session.streamed_bytes = part.offset_s + offset, 0
            async with contextlib.aclosing(
                decode_pcm(str(part.path), start_s=offset, ffmpeg=self._ffmpeg)
            ) as pcm:
                async for chunk in pcm:
                    yield chunk
            offset = 0.0

    # -- tools ---------------------------------------------------------------

    def _summary(self, book: Book, position: float, finished: bool) -> dict[str, Any]:
        progress = "finished" if finished else "not started" if position < 1 else clock(position)
        return {
            "title": book.title,
            "author": book.author,
            "length": clock(book.duration_s),
            "progress": progress,
        }

    async def _search(self, args: dict[str, Any]) -> ToolResult:
        books = await self.library()
        query = str(args.get("query") or "").strip()
        if query:
            books = rank(query, [(b, (b.title, b.author or "")) for b in books])
        summaries = [self._summary(b, *await self._bookmark(b)) for b in books[:LIST_LIMIT]]
        return ToolResult(
            output=json.dumps({"count": len(books), "books": summaries, "query": query or None})
        )

    async def _play(self, args: dict[str, Any]) -> ToolResult:
        title = str(args.get("title") or "").strip()
        book = await self._find(title) if title else await self._last_book()
        position, finished = await self._bookmark(book)
        near_end = book.duration_s - min(RESTART_NEAR_END_S, 0.05 * book.duration_s)
        if args.get("from_start") or finished or position >= near_end:
            position = 0.0
        return self._play_from(book, position, earcons=True)

    def _play_from(self, book: Book, position: float, *, earcons: bool) -> ToolResult:
        missing = [str(p.path) for p in book.parts if not p.path.is_file()]
        if missing:
            raise _Fail("file_missing", "the book's file is gone from the library", files=missing)
        chapter = book.chapter_index(position)
        output = {
            "playing": book.title,
            "author": book.author,
            "from": clock(position),
            "resumed": position > 0,
            "length": clock(book.duration_s),
            "chapter": None if chapter is None else book.chapters[chapter].title,
        }
        return ToolResult(
            output=json.dumps(output), side_effect=self.stream(book, position, earcons=earcons)
        )

    async def _pause(self, args: dict[str, Any]) -> ToolResult:
        session = self._current
        if session is None:
            raise _Fail("not_playing", "no audiobook is playing")
        output = {"paused": session.book.title, "at": clock(session.position_s)}
        return ToolResult(output=json.dumps(output), side_effect=CancelMedia())

    async def _seek(self, args: dict[str, Any]) -> ToolResult:
        try:
            delta = float(args["seconds"])
        except (KeyError, TypeError, ValueError):
            raise _Fail("invalid_seconds", "seconds must be a number (negative = back)") from None
        book = await self._last_book()
        target = await self._position(book) + delta
        if target >= book.duration_s:
            raise _Fail(
                "past_end",
                "that is past the end of the book",
                at=clock(await self._position(book)),
                length=clock(book.duration_s),
            )
        return self._play_from(book, max(0.0, target), earcons=False)

    async def _chapter(self, args: dict[str, Any]) -> ToolResult:
        book = await self._last_book()
        if not book.chapters:
            raise _Fail("no_chapters", "this book has no chapter marks", title=book.title)
        current = book.chapter_index(await self._position(book)) or 0
        number = args.get("number")
        direction = str(args.get("direction") or "next")
        if number is not None:
            target = int(number) - 1
        else:
            offsets = {"next": 1, "previous": -1, "restart": 0}
            if direction not in offsets:
                raise _Fail("invalid_direction", "direction is next, previous or restart")
            target = current + offsets[direction]
        if not 0 <= target < len(book.chapters):
            raise _Fail(
                "no_such_chapter",
                "there is no such chapter",
                chapter=target + 1,
                chapters=len(book.chapters),
            )
        return self._play_from(book, book.chapters[target].start_s, earcons=False)

    async def _status(self, args: dict[str, Any]) -> ToolResult:
        playing = self._current is not None
        try:
            book = await self._last_book()
        except _Fail:
            return ToolResult(output=json.dumps({"playing": False, "book": None}))
        position = await self._position(book)
        chapter = book.chapter_index(position)
        status: dict[str, Any] = {
            "playing": playing,
            "book": book.title,
            "author": book.author,
            "position": clock(position),
            "length": clock(book.duration_s),
        }
        if chapter is not None:
            status["chapter"] = book.chapters[chapter].title
            status["chapter_number"] = chapter + 1
            status["chapters"] = len(book.chapters)
        return ToolResult(output=json.dumps(status))
