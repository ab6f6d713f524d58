"""Starting a skill host process, and the daemon's end of its link.

A host starts one of two ways, each with the argv and environment of
:mod:`huxleyd.skillhost.hostexec` (nothing of the daemon's: no key in an
environment variable reaches it):

- :class:`~huxleyd.skillhost.launchers.Launcher` spawns it: the skills environment's interpreter, as
  ``setpriv`` to the skill user when the daemon is root, else as the
  daemon's own user (said once, ``skill_host_same_user``);
- :class:`~huxleyd.skillhost.activated.ActivatedLauncher` asks systemd for
  it: the daemon runs as its own user with ``NoNewPrivileges=yes`` and no
  capabilities, so it connects to ``huxleyd-skillhost.socket`` and systemd
  starts the host as ``huxley-skills`` in a sandboxed unit of its own.
  :func:`~huxleyd.skillhost.launchers.launcher_for` picks it when that socket exists.

:class:`HostLink` is the daemon's end of one running host: it sends
messages, awaits answers each with its deadline, and kills the host when it
breaks the link's rules (a bad frame, a flood) or stops answering pings.
Nothing here ever waits on the host past a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from huxleyd.errors import SkillHostError
from huxleyd.logs import get_logger
from huxleyd.skillhost.hostpath.huxley_skillhost import link

log = get_logger("huxleyd.skills")

INVENTORY_TIMEOUT_S = 10.0
"""Listing the skills imports their modules (for their schemas): a module that hangs at
import costs the start this much, then the third-party skills are left out."""
PING_EVERY_S = 1.0
PONG_DEADLINE_S = 2.0
EXIT_WAIT_S = 0.8
STDERR_LINES = 50
"""The host's stderr lines logged per host (a crash's traceback); the rest is counted."""


class HostProcess(Protocol):
    """What the link needs of a host process (an asyncio subprocess, or an activated one)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    def kill(self) -> None: ...

    async def wait(self) -> int: ...

    def exit_words(self, code: int) -> str:
        """How the host's end reads in a log line, from what :meth:`wait` returned."""
        ...


@dataclass(frozen=True, slots=True)
class SpawnedProcess:
    """A host this daemon spawned: its own child, whose status it sees."""

    process: asyncio.subprocess.Process

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def stderr(self) -> asyncio.StreamReader | None:
        return self.process.stderr

    def kill(self) -> None:
        self.process.kill()

    async def wait(self) -> int:
        return await self.process.wait()

    def exit_words(self, code: int) -> str:
        return f"status {code}"


@dataclass(frozen=True, slots=True)
class Started:
    process: HostProcess
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


class HostLauncher(Protocol):
    """How hosts start: spawned (:mod:`.launchers`) or activated (:mod:`.activated`)."""

    @property
    def user(self) -> str | None: ...

    @property
    def uid(self) -> int | None: ...

    @property
    def gid(self) -> int | None: ...

    @property
    def makes_data_dirs(self) -> bool: ...

    async def start(self) -> Started: ...

    def inventory(self, timeout_s: float) -> str: ...


def inventory(
    launcher: HostLauncher, *, timeout_s: float = INVENTORY_TIMEOUT_S
) -> dict[str, dict[str, dict[str, Any] | None]]:
    """Skill name → {distribution: its config schema}, as the skills environment's
    own interpreter finds them.

    Run by a host process (as the skill user), so no skill code runs in the
    daemon's interpreter even to list them. SkillHostError with one line.
    """
    out = launcher.inventory(timeout_s)
    try:
        found = json.loads(out)
        return {
            str(name): {
                str(dist): (schema if isinstance(schema, dict) else None)
                for dist, schema in dists.items()
            }
            for name, dists in found.items()
        }
    except (ValueError, AttributeError, TypeError) as exc:
        raise SkillHostError(f"the skill list is not JSON: {out[:80]!r}") from exc


RequestHandler = Callable[[link.Request], Awaitable[Any]]


class HostLink:
    """One running host process and the daemon's end of its socket.

    After :meth:`start`, use :meth:`ask` (a request and its answer within a
    deadline), :meth:`send` (no answer), :meth:`open_stream`. When the host
    dies, hangs or floods, it is killed once, every waiting :meth:`ask`
    raises SkillHostError, and ``on_down(reason)`` is told.
    """

    def __init__(
        self,
        launcher: HostLauncher,
        *,
        label: str,
        on_request: RequestHandler,
        on_log: Callable[[link.Log], None],
        on_down: Callable[[str], None],
        ping_every_s: float = PING_EVERY_S,
        pong_deadline_s: float = PONG_DEADLINE_S,
    ) -> None:
        self.launcher = launcher
        self.label = label
        self._on_request = on_request
        self._on_log = on_log
        self._on_down = on_down
        self.ping_every_s = ping_every_s
        self.pong_deadline_s = pong_deadline_s
        self.process: HostProcess | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._seq = 0
        self._pending: dict[int, asyncio.Future[link.Done | link.Pong]] = {}
        self._streams: dict[int, asyncio.Queue[link.Chunk | link.StreamEnd]] = {}
        self._credit: dict[int, int] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.flood_gate = link.RateGate()
        """Messages per second past which the host is a flood (a test may tighten it)."""
        self.down: str | None = None
        """Why the host is gone (None while it runs)."""
        self._stopping = False
        self.prompt_context = ""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self) -> None:
        started = await self.launcher.start()
        self.process, self._writer = started.process, started.writer
        reader = started.reader
        log.info(
            "skill_host_started",
            skill=self.label,
            pid=self.process.pid,
            user=self.launcher.user or "(the daemon's)",
        )
        self._spawn(self._read(reader))
        self._spawn(self._stderr())
        self._spawn(self._ping())

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def send(self, message: link.Message) -> None:
        if self.down is None and self._writer is not None and not self._writer.is_closing():
            self._writer.write(link.encode(message))

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    async def ask(
        self, make: Callable[[int], link.Message], deadline_s: float | None
    ) -> link.Done | link.Pong:
        """Send ``make(seq)`` and await its answer.

        Past ``deadline_s`` (None: the caller bounds it) the host is killed and
        SkillHostError raised: a request missing its deadline means a host that
        cannot be trusted with the next one. When the caller is cancelled
        (a tool's budget), Cancel is sent and the host lives on.
        """
        if self.down is not None:
            raise SkillHostError(self.down)
        seq = self.next_seq()
        future: asyncio.Future[link.Done | link.Pong] = asyncio.get_running_loop().create_future()
        self._pending[seq] = future
        message = make(seq)
        self.send(message)
        try:
            return await asyncio.wait_for(asyncio.shield(future), deadline_s)
        except TimeoutError:
            self.kill(f"no answer to {type(message).__name__} within {deadline_s:g} s")
            raise SkillHostError(self.down or "hung") from None
        except asyncio.CancelledError:
            if not isinstance(message, link.Ping):
                self.send(link.Cancel(seq))
            raise
        finally:
            self._pending.pop(seq, None)

    def open_stream(self, stream: int) -> asyncio.Queue[link.Chunk | link.StreamEnd]:
        """Start ``stream``; its chunks (at most the window) and its end arrive on the queue."""
        queue: asyncio.Queue[link.Chunk | link.StreamEnd] = asyncio.Queue()
        if self.down is not None:
            queue.put_nowait(link.StreamEnd(stream, error=self.down))
            return queue
        self._streams[stream] = queue
        self._credit[stream] = link.STREAM_WINDOW_CHUNKS
        self.send(link.StreamOpen(stream, link.STREAM_WINDOW_CHUNKS))
        return queue

    def took_chunk(self, stream: int) -> None:
        """The consumer took one chunk: the host may send one more."""
        if stream in self._credit:
            self._credit[stream] += 1
            self.send(link.Credit(stream, 1))

    def forget_stream(self, stream: int) -> None:
        self._streams.pop(stream, None)
        self._credit.pop(stream, None)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        while self.down is None:
            try:
                message = await link.read(reader, link.TO_DAEMON)
            except link.LinkError as exc:
                self.kill(await self._why_closed(str(exc)))
                return
            if not self.flood_gate.admit(loop.time()):
                limit = self.flood_gate.limit_per_s
                self.kill(f"flooded the link (more than {limit} messages in 1 s)")
                return
            problem = self._dispatch(message)
            if problem is not None:
                self.kill(problem)
                return

    async def _why_closed(self, problem: str) -> str:
        if problem != "the link closed" or self.process is None:
            return problem
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(self.process.wait(), EXIT_WAIT_S)
            return f"the skill host exited ({self.process.exit_words(code)})"
        return problem

    def _dispatch(self, message: link.Message) -> str | None:
        """Route one message; a reason to kill the host when it broke a rule."""
        match message:
            case link.Done(seq) | link.Pong(seq):
                if isinstance(message, link.Pong):
                    self.prompt_context = message.prompt_context
                future = self._pending.get(seq)
                if future is not None and not future.done():
                    future.set_result(message)
            case link.Chunk(stream):
                if stream not in self._streams:
                    return None  # a chunk of a stream just closed
                if self._credit[stream] <= 0:
                    return f"sent chunks of stream {stream} beyond its credit"
                self._credit[stream] -= 1
                self._streams[stream].put_nowait(message)
            case link.StreamEnd(stream):
                queue = self._streams.pop(stream, None)
                self._credit.pop(stream, None)
                if queue is not None:
                    queue.put_nowait(message)
            case link.Request():
                self._spawn(self._answer(message))
            case link.Log():
                self._on_log(message)
        return None

    async def _answer(self, request: link.Request) -> None:
        try:
            value = await self._on_request(request)
        except Exception as exc:
            self.send(link.Reply(request.seq, error=f"{type(exc).__name__}: {exc}"))
            return
        self.send(link.Reply(request.seq, value=value))

    async def _ping(self) -> None:
        while self.down is None:
            await asyncio.sleep(self.ping_every_s)
            with contextlib.suppress(SkillHostError):
                await self.ask(link.Ping, self.pong_deadline_s)

    async def _stderr(self) -> None:
        assert self.process is not None
        if self.process.stderr is None:
            return  # an activated host's stderr is its unit's journal
        shown = dropped = 0
        async for raw in self.process.stderr:
            if shown < STDERR_LINES:
                shown += 1
                line = raw.decode(errors="replace").rstrip()
                log.warning("skill_host_stderr", skill=self.label, line=line)
            else:
                dropped += 1
        if dropped:
            log.warning("skill_host_stderr_dropped", skill=self.label, lines=dropped)

    def quiet(self) -> None:
        """From now on an end of the host is expected: ``on_down`` is not told."""
        self._stopping = True

    def kill(self, reason: str) -> None:
        """Kill the host now (idempotent): answers fail, streams end, ``on_down`` is told."""
        if self.down is not None:
            return
        self.down = reason
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        if self._writer is not None:
            self._writer.close()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(SkillHostError(reason))
        for stream, queue in self._streams.items():
            queue.put_nowait(link.StreamEnd(stream, error=reason))
        self._streams.clear()
        self._credit.clear()
        if self._stopping:
            log.info("skill_host_stopped", skill=self.label, how=reason)
            return
        log.error("skill_host_down", skill=self.label, reason=reason)
        self._on_down(reason)

    async def stop(self, teardown_deadline_s: float = 4.0) -> None:
        """Teardown within its deadline, the exit within :data:`EXIT_WAIT_S`; else killed.

        Killed also when the caller gives up first (cancelled: the host's own
        teardown budget, a shutdown): a host never outlives its stop."""
        self._stopping = True
        try:
            if self.down is None:
                with contextlib.suppress(SkillHostError):
                    await self.ask(link.Teardown, teardown_deadline_s)
            if self.process is not None and self.process.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.process.wait(), EXIT_WAIT_S)
        finally:
            if self.process is not None and self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
            self.down = self.down or "stopped"
            if self._writer is not None:
                self._writer.close()
            for task in list(self._tasks):
                task.cancel()
