"""ffmpeg for skills: decode any audio to PCM16 24 kHz mono, probe tags and
chapters, and match spoken names against titles.

Shared by the audiobooks and radio skills (imported relatively, so it stays
inside the skills package). Like every skill module it imports ``huxley_sdk``
and the stdlib only — never the runtime.

Process hygiene is the point of :func:`decode_pcm`: ffmpeg runs as an asyncio
subprocess whose stdout is read in fixed chunks, and closing the iterator
early (the runtime closes a stream on interrupt, supersede or stop)
terminates ffmpeg and awaits it, so no zombie or orphan decoder outlives its
stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import re
import unicodedata
from collections import deque
from collections.abc import AsyncGenerator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from huxley_sdk import BYTES_PER_SECOND, SAMPLE_RATE

CHUNK_MS = 100
CHUNK_BYTES = BYTES_PER_SECOND * CHUNK_MS // 1000
"""4,800 bytes: 100 ms of PCM16 24 kHz mono, the unit streams are yielded in."""
AUDIO_EXTENSIONS = frozenset({".mp3", ".m4b", ".m4a", ".ogg", ".opus", ".flac", ".wav"})
NETWORK_SCHEMES = frozenset({"http", "https"})
TERMINATE_TIMEOUT_S = 2.0
"""How long ffmpeg gets to exit after SIGTERM before it is killed."""
NETWORK_TIMEOUT_US = 15_000_000
"""ffmpeg ``-rw_timeout``: a stalled HTTP read fails after 15 s instead of hanging."""

T = TypeVar("T")


class MediaError(Exception):
    """ffmpeg or ffprobe failed; the message names the source and quotes the tool."""


class DecodeError(MediaError):
    """ffmpeg exited non-zero while decoding ``source``."""

    def __init__(self, source: str, returncode: int, stderr_tail: str) -> None:
        self.source = source
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        detail = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else "no message"
        super().__init__(f"ffmpeg failed on {source} (exit {returncode}): {detail}")


def is_network_source(source: str) -> bool:
    """True for http(s) URLs, which get ffmpeg's reconnect options."""
    return urlsplit(source).scheme.lower() in NETWORK_SCHEMES


def decode_command(source: str, *, start_s: float = 0.0, ffmpeg: str = "ffmpeg") -> list[str]:
    """The ffmpeg argv that writes ``source`` from ``start_s`` as raw PCM16 24 kHz mono."""
    cmd = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error"]
    if is_network_source(source):
        cmd += ["-reconnect", "1", "-reconnect_streamed", "1", "-reconnect_delay_max", "5"]
        cmd += ["-rw_timeout", str(NETWORK_TIMEOUT_US)]
    if start_s > 0:
        # Before -i: input seeking, which decodes from the previous keyframe
        # and discards up to the exact position (fast and sample-accurate).
        cmd += ["-ss", f"{start_s:.3f}"]
    cmd += ["-i", source, "-vn", "-sn", "-dn", "-f", "s16le", "-acodec", "pcm_s16le"]
    cmd += ["-ac", "1", "-ar", str(SAMPLE_RATE), "-"]
    return cmd


@dataclass
class _StderrTail:
    """The last lines ffmpeg wrote on stderr; draining it keeps ffmpeg from blocking."""

    lines: deque[str] = field(default_factory=lambda: deque(maxlen=20))

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while line := await stream.readline():
            self.lines.append(line.decode("utf-8", "replace").rstrip())

    def text(self) -> str:
        return "\n".join(self.lines)


async def _discard(stream: asyncio.StreamReader | None) -> None:
    if stream is not None:
        while await stream.read(65536):
            pass


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Terminate ``proc`` if it still runs and wait for it (kill after a grace period).

    stdout is drained meanwhile: on Python 3.11 ``Process.wait()`` returns
    only once every pipe has reached EOF, and a pipe we stopped reading is
    paused (and ffmpeg blocked writing into it), so without the drain a
    closed stream would wait forever.
    """
    if proc.returncode is not None:
        return
    drain = asyncio.create_task(_discard(proc.stdout), name="ffmpeg-discard")
    try:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), TERMINATE_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    except BaseException:
        # Cancelled while reaping: do not leave a decoder behind; the child
        # watcher reaps the killed process.
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    finally:
        drain.cancel()


async def decode_pcm(
    source: str,
    *,
    start_s: float = 0.0,
    chunk_bytes: int = CHUNK_BYTES,
    ffmpeg: str = "ffmpeg",
) -> AsyncGenerator[bytes, None]:
    """Yield ``source`` from ``start_s`` as PCM16 24 kHz mono, ``chunk_bytes`` at a time.

    Every chunk but the last is exactly ``chunk_bytes``; all hold whole
    samples. At the end, a non-zero ffmpeg exit raises :class:`DecodeError`
    (after the audio it did produce). Closing the iterator early terminates
    ffmpeg and awaits it. Consumers that wrap this in their own generator
    must close it explicitly (``contextlib.aclosing``): an outer generator's
    ``finally`` does not close an inner one.
    """
    if chunk_bytes <= 0 or chunk_bytes % 2:
        raise ValueError(f"chunk_bytes must be a positive even number, got {chunk_bytes}")
    cmd = decode_command(source, start_s=start_s, ffmpeg=ffmpeg)
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        raise MediaError(f"{ffmpeg} not found: install ffmpeg to play {source}") from exc
    tail = _StderrTail()
    drain = asyncio.create_task(tail.drain(proc.stderr), name="ffmpeg-stderr")
    try:
        assert proc.stdout is not None
        while True:
            try:
                chunk = await proc.stdout.readexactly(chunk_bytes)
            except asyncio.IncompleteReadError as exc:
                last = exc.partial[: len(exc.partial) & ~1]
                if last:
                    yield last
                break
            yield chunk
        returncode = await proc.wait()
        await drain
        if returncode != 0:
            raise DecodeError(source, returncode, tail.text())
    finally:
        await _reap(proc)
        drain.cancel()


@dataclass(frozen=True, slots=True)
class ProbedChapter:
    """A chapter marker from the file's metadata, in seconds from its start."""

    title: str
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class ProbeInfo:
    """What ffprobe says about a file: duration, tags (lower-case keys), chapters."""

    path: Path
    duration_s: float
    tags: dict[str, str]
    chapters: tuple[ProbedChapter, ...] = ()

    def tag(self, *names: str) -> str | None:
        """The first non-empty tag among ``names``."""
        for name in names:
            value = self.tags.get(name, "").strip()
            if value:
                return value
        return None


def parse_probe(path: Path, data: dict[str, Any]) -> ProbeInfo:
    """Build :class:`ProbeInfo` from ``ffprobe -show_format -show_chapters -of json`` output."""
    fmt = data.get("format", {})
    try:
        duration = float(fmt.get("duration", 0.0))
    except (TypeError, ValueError):
        duration = 0.0
    tags = {str(k).lower(): str(v) for k, v in (fmt.get("tags") or {}).items()}
    chapters: list[ProbedChapter] = []
    for index, raw in enumerate(data.get("chapters") or []):
        try:
            start, end = float(raw["start_time"]), float(raw["end_time"])
        except (KeyError, TypeError, ValueError):
            continue
        title = str((raw.get("tags") or {}).get("title") or f"Chapter {index + 1}")
        chapters.append(ProbedChapter(title, start, end))
    return ProbeInfo(path, duration, tags, tuple(chapters))


async def probe(path: Path, *, ffprobe: str = "ffprobe", timeout_s: float = 15.0) -> ProbeInfo:
    """Run ffprobe on ``path``. Raises :class:`MediaError` naming the file on failure."""
    cmd = [ffprobe, "-v", "error", "-show_format", "-show_chapters", "-of", "json", str(path)]
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        raise MediaError(f"{ffprobe} not found: install ffmpeg to read {path}") from exc
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        await _reap(proc)
        raise MediaError(f"{path}: ffprobe did not answer within {timeout_s:g} s") from None
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()  # ffprobe's output is small: its pipes reach EOF at once
        raise
    if proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip() or f"exit {proc.returncode}"
        raise MediaError(f"{path}: ffprobe cannot read it: {message}")
    try:
        return parse_probe(path, json.loads(out))
    except json.JSONDecodeError as exc:
        raise MediaError(f"{path}: ffprobe printed invalid JSON ({exc})") from exc


def normalize(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a title or query."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", plain).split())


def _token_hit(token: str, words: list[str]) -> bool:
    return any(
        w == token
        or (len(token) >= 3 and w.startswith(token))
        or (len(token) >= 4 and difflib.SequenceMatcher(None, token, w).ratio() >= 0.8)
        for w in words
    )


def match_score(query: str, text: str) -> float:
    """How well ``query`` names ``text``, 0 to 1.

    1 for an exact match, 0.9 when the query is a substring, else up to 0.8
    for the share of query words found (exactly, as a prefix, or with a
    typo), or the overall similarity when that is higher.
    """
    q, t = normalize(query), normalize(text)
    if not q or not t:
        return 0.0
    if q == t:
        return 1.0
    if q in t:
        return 0.9
    q_tokens, t_tokens = q.split(), t.split()
    hits = sum(_token_hit(token, t_tokens) for token in q_tokens)
    by_tokens = 0.8 * hits / len(q_tokens)
    return max(by_tokens, 0.7 * difflib.SequenceMatcher(None, q, t).ratio())


def _score(query: str, texts: str | Sequence[str]) -> float:
    return max(
        (match_score(query, t) for t in ([texts] if isinstance(texts, str) else texts)), default=0.0
    )


def rank(
    query: str, items: Iterable[tuple[T, str | Sequence[str]]], *, threshold: float = 0.5
) -> list[T]:
    """Items whose text (or best of several texts) matches ``query`` at ``threshold`` or better.

    Best first; equal scores keep their original order.
    """
    scored = [(_score(query, texts), i, item) for i, (item, texts) in enumerate(items)]
    kept = sorted((s for s in scored if s[0] >= threshold), key=lambda s: (-s[0], s[1]))
    return [item for _, _, item in kept]


def best_match(
    query: str, items: Iterable[tuple[T, str | Sequence[str]]], *, threshold: float = 0.5
) -> tuple[T | None, list[T]]:
    """``(winner, tied)``: the one clear best match, or None and the equally good bests.

    ``tied`` is empty when nothing reaches ``threshold``; it holds the winner
    alone when there is one.
    """
    scored = [(_score(query, texts), item) for item, texts in items]
    scored = [s for s in scored if s[0] >= threshold]
    if not scored:
        return None, []
    top = max(s[0] for s in scored)
    tied = [item for score, item in scored if top - score < 0.05]
    return (tied[0], tied) if len(tied) == 1 else (None, tied)
