"""The link between the daemon and a skill host: a short table of typed messages.

Standard library only: both processes import this file (the daemon as
``huxleyd.skillhost.hostpath.huxley_skillhost.link``, the host as
``huxley_skillhost.link``), and the host runs in the skills environment,
which has none of the daemon's dependencies.

One frame is ``!II`` (the JSON part's length, the PCM part's length), a JSON
object ``{"t": <message class>, ...fields}``, then the raw bytes of the
message's ``pcm`` field (empty for messages without one). A frame longer
than :data:`MAX_FRAME_BYTES`, or more than :data:`MAX_MESSAGES_PER_S` in one
second, is a *flood*: the daemon kills the host (see the table in
``docs/architecture.md``, "The skill host process").

Every request carries a ``seq`` that its answer (:class:`Done` or
:class:`Reply`) repeats. Each side numbers its own requests.

Daemon → host (what answers it; what the daemon does when the deadline passes):

==============  ===========================  ==========================================
message         answer                       deadline missed
==============  ===========================  ==========================================
Load            Done (tools, schema)         15 s: the host is killed, the skill left out
Setup           Done                         the setup budget: killed, left out, retried
Reconfigure     Done                         10 s: killed, left out, retried
Call            Done (output, side effect)   the tool's budget: Cancel sent, "timeout"
Cancel          —                            —
Invoke          Done                         per callback (1–5 s): the callback failed
StreamOpen      Chunk… then StreamEnd        the media runner's own (it closes it)
Credit          —                            —
StreamClose     StreamEnd                    2 s: the stream is forgotten
Reply           —                            —
Ping            Pong (prompt context)        2 s: hung, killed, left out, retried
Teardown        Done                         5 s: killed
==============  ===========================  ==========================================

Host → daemon: Done, Chunk (never more than the stream's credit), StreamEnd,
Request (storage, secrets, inject_turn…; answered by Reply), Log, Pong.
"""

from __future__ import annotations

import asyncio
import json
import struct
from dataclasses import dataclass, field, fields
from typing import Any

HEADER = struct.Struct("!II")
MAX_FRAME_BYTES = 8 * 1024 * 1024
"""One frame at most (a PlaySound of about 3 minutes of 24 kHz PCM)."""
MAX_MESSAGES_PER_S = 2000
"""A host sending more than this in one second floods the link (50 audio chunks
a second is a stream; a log line per tool call is chatty; 2,000 is neither)."""
STREAM_WINDOW_CHUNKS = 8
"""How many chunks of an AudioStream may be in flight before the host waits for
:class:`Credit` (the media runner's own ring is the rest of the buffer)."""


class LinkError(Exception):
    """The other side broke the link's rules (a bad frame, a flood, a closed socket)."""


# ---------------------------------------------------------------- daemon → host


@dataclass(frozen=True, slots=True)
class Load:
    """Find skill ``name`` in the skills environment's entry points and instantiate it."""

    seq: int
    name: str
    distribution: str


@dataclass(frozen=True, slots=True)
class Setup:
    """Call the skill's ``setup(ctx)`` with a context whose callables use the link."""

    seq: int
    config: dict[str, Any]
    language: str
    timezone: str
    persona_data_dir: str
    make_data_dir: bool = False
    """Make ``persona_data_dir`` first: a host systemd started (the daemon cannot)."""


@dataclass(frozen=True, slots=True)
class Reconfigure:
    """Call ``reconfigure(ctx)`` with the new config."""

    seq: int
    config: dict[str, Any]
    language: str
    timezone: str


@dataclass(frozen=True, slots=True)
class Call:
    """Run ``handle(tool, args)``; the arguments were checked by the daemon."""

    seq: int
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel the call (or setup) ``seq``: its budget passed or the turn ended."""

    seq: int


@dataclass(frozen=True, slots=True)
class Invoke:
    """Run callback ``ref`` the host registered (a claim's ``on_mic_frame``…)."""

    seq: int
    ref: int
    args: list[Any] = field(default_factory=list)
    pcm: bytes = b""


@dataclass(frozen=True, slots=True)
class StreamOpen:
    """Start stream ``stream`` (call the AudioStream's ``factory()``), ``credit`` chunks."""

    stream: int
    credit: int


@dataclass(frozen=True, slots=True)
class Credit:
    """The daemon took ``chunks`` more chunks of ``stream``: the host may send as many."""

    stream: int
    chunks: int


@dataclass(frozen=True, slots=True)
class StreamClose:
    """Close ``stream``'s iterator (``aclose``: its ``finally`` runs); StreamEnd answers."""

    stream: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to the host's :class:`Request` ``seq``."""

    seq: int
    error: str | None = None
    value: Any = None


@dataclass(frozen=True, slots=True)
class Ping:
    """Is the host's loop turning? Pong within 2 s, else it is hung."""

    seq: int


@dataclass(frozen=True, slots=True)
class Teardown:
    """Call ``teardown()``, answer, and exit."""

    seq: int


# ---------------------------------------------------------------- host → daemon


@dataclass(frozen=True, slots=True)
class Done:
    """The answer to the daemon's request ``seq``: ``error`` None when it worked."""

    seq: int
    error: str | None = None
    value: Any = None
    pcm: bytes = b""


@dataclass(frozen=True, slots=True)
class Chunk:
    """PCM16 24 kHz mono of ``stream``; one per credit."""

    stream: int
    pcm: bytes


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """``stream`` ended (ran out, was closed, or its iterator raised ``error``)."""

    stream: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """Something only the daemon has: ``op`` is ``storage.get``, ``inject_turn``…"""

    seq: int
    op: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Log:
    """One event of the skill's logger, for the daemon's journal."""

    level: str
    event: str
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Pong:
    """The answer to :class:`Ping` ``seq``, with the skill's ``prompt_context()`` now."""

    seq: int
    prompt_context: str = ""


Message = (
    Load
    | Setup
    | Reconfigure
    | Call
    | Cancel
    | Invoke
    | StreamOpen
    | Credit
    | StreamClose
    | Reply
    | Ping
    | Teardown
    | Done
    | Chunk
    | StreamEnd
    | Request
    | Log
    | Pong
)
TO_HOST: tuple[type, ...] = (
    Load,
    Setup,
    Reconfigure,
    Call,
    Cancel,
    Invoke,
    StreamOpen,
    Credit,
    StreamClose,
    Reply,
    Ping,
    Teardown,
)
TO_DAEMON: tuple[type, ...] = (Done, Chunk, StreamEnd, Request, Log, Pong)
_BY_NAME: dict[str, type] = {cls.__name__: cls for cls in (*TO_HOST, *TO_DAEMON)}


def encode(message: Message) -> bytes:
    """One frame of ``message``."""
    body: dict[str, Any] = {"t": type(message).__name__}
    pcm = b""
    for f in fields(message):
        value = getattr(message, f.name)
        if f.name == "pcm":
            pcm = bytes(value)
        else:
            body[f.name] = value
    text = json.dumps(body, separators=(",", ":"), default=str).encode()
    return HEADER.pack(len(text), len(pcm)) + text + pcm


def decode(text: bytes, pcm: bytes, allowed: tuple[type, ...]) -> Message:
    """A frame's parts back into a message of one of the ``allowed`` classes."""
    try:
        body = json.loads(text)
        cls = _BY_NAME[body.pop("t")]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LinkError(f"not a link message: {text[:80]!r}") from exc
    if cls not in allowed:
        raise LinkError(f"{cls.__name__} may not be sent this way")
    if pcm:
        body["pcm"] = pcm
    try:
        message: Message = cls(**body)
    except TypeError as exc:
        raise LinkError(f"{cls.__name__}: {exc}") from exc
    return message


async def read(reader: asyncio.StreamReader, allowed: tuple[type, ...]) -> Message:
    """The next message; LinkError on a bad or oversized frame, EOF included."""
    try:
        header = await reader.readexactly(HEADER.size)
        text_len, pcm_len = HEADER.unpack(header)
        if text_len + pcm_len > MAX_FRAME_BYTES:
            raise LinkError(f"a frame of {text_len + pcm_len} bytes (at most {MAX_FRAME_BYTES})")
        text = await reader.readexactly(text_len)
        pcm = await reader.readexactly(pcm_len) if pcm_len else b""
    except (asyncio.IncompleteReadError, ConnectionError) as exc:
        # A peer that exits with unread bytes in its socket resets it: closed all the same.
        raise LinkError("the link closed") from exc
    return decode(text, pcm, allowed)


class RateGate:
    """Counts messages per second; :meth:`admit` is False past the limit (a flood)."""

    def __init__(self, limit_per_s: int = MAX_MESSAGES_PER_S) -> None:
        self.limit_per_s = limit_per_s
        self._window_start = 0.0
        self._count = 0

    def admit(self, now_s: float) -> bool:
        if now_s - self._window_start >= 1.0:
            self._window_start = now_s
            self._count = 0
        self._count += 1
        return self._count <= self.limit_per_s
