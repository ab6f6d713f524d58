"""The control socket server: a unix stream socket, line-delimited JSON.

Adapter layer: asyncio streams around the pure :mod:`~huxleyd.control.protocol`
and a :class:`~huxleyd.control.handler.ControlHandler` (the daemon). ::

    server = ControlServer(handler, config.control)
    await server.start()        # binds, mode 0660, group from settings
    ...
    await server.close()        # idempotent; removes the socket file

Who may connect is decided by the socket file's mode (0660) and group: the
kernel refuses ``connect`` to anyone outside the group. The file is bound
under a temporary name, given its mode and group, then renamed into place,
so it is never reachable with a looser mode. What a connected peer may run
is decided by :mod:`~huxleyd.control.rights` from its credentials
(``SO_PEERCRED``, read by :mod:`~huxleyd.control.peers`): reading, changing
the device, each its own group.

Each connection is served by its own task; its requests are answered in
order, each under ``request_timeout_s``. A bad line gets an error reply and
the connection stays usable. Lines are read, and ``levels``/``watch`` answered
as streams, by :mod:`~huxleyd.control.streams`. Request bodies are never logged above DEBUG
(a ``say`` text is the user's words), and only the command name even then.

No client can lock the others out: each peer's uid (``SO_PEERCRED``) may
hold at most ``max_clients_per_uid`` connections, all together at most
``max_clients``; at either limit the connection idle the longest (not in
the middle of a request) is closed to make room. Only when every one is
busy is the newcomer refused. Readers (neither root, the daemon's user nor
an operator) share all but :func:`reserve` of the places and may hold at most
``max_watches_per_uid`` ``watch`` streams each; an admin (root, an operator)
who finds every place taken closes a reader's connection, a quiet ``watch``
included, so root and the operators always get an answer. The listen
backlog (:data:`BACKLOG`) is deep enough that a burst of connects does not
make an admin's connect fail with EAGAIN (the client retries it anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import grp
import os
import socket
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huxleyd.config.control_socket import MAX_SOCKET_PATH_BYTES, ControlSettings
from huxleyd.control.errors import (
    CommandFailedError,
    ControlError,
    ControlProtocolError,
    ControlSocketInUseError,
)
from huxleyd.control.handler import Announcer, ControlHandler
from huxleyd.control.peers import peer_of, rights_from
from huxleyd.control.protocol import (
    MAX_LINE_BYTES,
    AnnounceArgs,
    Command,
    ErrorReply,
    EventArgs,
    MuteArgs,
    PttArgs,
    Reply,
    Request,
    ResultReply,
    SayArgs,
    VolumeArgs,
    parse_request,
)
from huxleyd.control.rights import Peer, Right, Rights
from huxleyd.control.streams import GONE, TOO_LONG, Encodable, read_line, stream
from huxleyd.errors import HuxleydError
from huxleyd.logs import get_logger

log = get_logger("huxleyd.control")

SOCKET_MODE = 0o660


@dataclass(slots=True)
class _Client:
    """One connection: whose it is, and whether it may be closed to make room."""

    task: asyncio.Task[Any]
    uid: int | None
    last_active: float
    busy: bool = False
    peer: Peer | None = None
    admin: bool = True
    """Root, the daemon's user or an operator: may use the reserve."""
    watching: bool = False
    """In a ``watch`` stream (busy, but quiet: an admin may close it for a place)."""
    evicted: bool = False
    """Closed to make room, its task not yet ended: it holds no place any more (in a
    burst, thousands of newcomers start before it runs, and each would pick it)."""


BACKLOG = 1024
"""Connects the kernel queues before ``accept``: a reader's burst fills asyncio's
default of 100 at once, and an admin's connect would fail with EAGAIN."""


def reserve(max_clients: int) -> int:
    """Places readers cannot take: a quarter of them, at least one (one place: none)."""
    return 0 if max_clients < 2 else max(1, max_clients // 4)


def _why(gid: int) -> str:
    """Why a chgrp to ``gid`` was refused: not a member, or refused anyway (a seccomp
    filter: the unit's SystemCallFilter= must keep @chown)."""
    if gid == os.getegid() or gid in os.getgroups():
        return (
            "refused although the daemon is in the group (its SystemCallFilter= must allow "
            "@chown); the socket keeps the daemon's group"
        )
    return "the daemon is not a member of the group; the socket keeps the daemon's group"


class ControlServer:
    """Serves ``handler`` on ``settings.socket_path`` until :meth:`close`."""

    def __init__(
        self, handler: ControlHandler, settings: ControlSettings, *, rights: Rights | None = None
    ) -> None:
        self._handler = handler
        self._settings = settings
        self._rights = rights or rights_from(settings)
        self._path = Path(settings.socket_path)
        self._server: asyncio.AbstractServer | None = None
        self._inode: int | None = None
        self._clients: dict[asyncio.Task[Any], _Client] = {}
        self._closed = False
        self.evictions = 0
        """Idle connections closed to make room for a newcomer."""

    @property
    def path(self) -> Path:
        return self._path

    @property
    def client_count(self) -> int:
        """Connections being served right now (those closed to make room excluded)."""
        return sum(1 for c in self._clients.values() if not c.evicted)

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Bind and listen. Raises :class:`ControlSocketInUseError` when another
        daemon listens on the path (or the path is not a socket), and
        :class:`ControlError` when the path is unusable."""
        if self._server is not None or self._closed:
            raise ControlError("control server already started (servers are single-use)")
        path = self._path
        if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
            raise ControlError(
                f"control.socket_path {path} is too long for a unix socket "
                f"({len(os.fsencode(path))} bytes, max {MAX_SOCKET_PATH_BYTES})"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ControlError(f"cannot create {path.parent}: {exc.strerror}") from exc
        await self._clear_stale(path)
        sock, group = self._bind(path)
        try:
            self._server = await asyncio.start_unix_server(
                self._serve_client, sock=sock, limit=MAX_LINE_BYTES, backlog=BACKLOG
            )
            bound = sock.getsockname()
            # Renaming replaces nothing live (checked above) and makes the
            # socket appear with its final mode and group already set.
            if bound != os.fsdecode(path):
                os.rename(bound, path)
            self._inode = os.stat(path).st_ino
        except BaseException:
            await self._abort_start(sock)
            raise
        log.info(
            "control_listening",
            path=str(path),
            mode=f"{SOCKET_MODE:04o}",
            group=group or "(unchanged)",
        )

    async def _abort_start(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            name = sock.getsockname()
            if isinstance(name, str) and name and name != os.fsdecode(self._path):
                os.unlink(name)
        if self._server is not None:
            self._server.close()
            self._server = None
        sock.close()

    async def _clear_stale(self, path: Path) -> None:
        """Remove a socket file nobody listens on; refuse anything else."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise ControlSocketInUseError(
                f"{path} exists and is not a socket; move it away or change control.socket_path"
            )
        try:
            async with asyncio.timeout(1.0):
                _, writer = await asyncio.open_unix_connection(path)
        except ConnectionRefusedError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            log.info("control_stale_socket_removed", path=str(path))
            return
        except FileNotFoundError:
            return
        except PermissionError as exc:
            raise ControlSocketInUseError(
                f"{path} exists and cannot be checked (permission denied); is another "
                "huxleyd running as another user?"
            ) from exc
        except TimeoutError as exc:
            raise ControlSocketInUseError(
                f"another huxleyd is listening on {path} (busy); stop it first"
            ) from exc
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        raise ControlSocketInUseError(
            f"another huxleyd is listening on {path}; stop it first "
            "(systemctl stop huxleyd) or change control.socket_path"
        )

    def _bind(self, path: Path) -> tuple[socket.socket, str | None]:
        """A socket bound (not yet listening) under a temporary name next to
        ``path``, already mode 0660 and in the configured group."""
        temp = path.with_name(f".hx-{os.getpid()}")
        if len(os.fsencode(temp)) > MAX_SOCKET_PATH_BYTES:
            temp = path  # too long to stage; bind in place and chmod at once
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(temp).st_mode):
                os.unlink(temp)  # left by a crashed daemon with our pid
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(os.fsencode(temp))
            os.chmod(temp, SOCKET_MODE)
            group = self._apply_group(temp)
        except OSError as exc:
            sock.close()
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise ControlError(f"cannot bind {path}: {exc.strerror or exc}") from exc
        return sock, group

    def _apply_group(self, path: Path) -> str | None:
        group = self._settings.socket_group
        if not group:
            return None
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            log.warning(
                "control_group_missing",
                group=group,
                detail="the socket keeps the daemon's group; create the group or set control.socket_group",
            )
            return None
        try:
            os.chown(path, -1, gid)
        except PermissionError as exc:
            log.warning("control_chgrp_failed", group=group, error=exc.strerror, detail=_why(gid))
            return None
        return group

    async def close(self) -> None:
        """Stop listening, drop the clients, remove the socket file. Idempotent."""
        if self._closed:
            return
        self._closed = True
        server, self._server = self._server, None
        if server is not None:
            server.close()
        clients = list(self._clients)
        for task in clients:
            task.cancel()
        if clients:
            await asyncio.gather(*clients, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        self._remove_socket_file()

    def path_is_ours(self) -> bool | None:
        """True: our socket is at the path; False: nothing is (it or its folder
        was removed); None: something else is there now (left alone)."""
        try:
            st = os.lstat(self._path)
        except FileNotFoundError:
            return False
        except OSError:  # a component of the path is no folder any more
            return None
        return True if st.st_ino == self._inode and stat.S_ISSOCK(st.st_mode) else None

    async def rebind(self) -> None:
        """Listen again at the path (its folder re-created): for a socket file
        someone removed. Connections being served go on; the old listener closes."""
        if self._closed:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        sock, _ = self._bind(self._path)
        old, self._server = self._server, None
        try:
            self._server = await asyncio.start_unix_server(
                self._serve_client, sock=sock, limit=MAX_LINE_BYTES, backlog=BACKLOG
            )
            bound = sock.getsockname()
            if bound != os.fsdecode(self._path):
                os.rename(bound, self._path)
            self._inode = os.stat(self._path).st_ino
        except BaseException:
            await self._abort_start(sock)
            self._server = old
            raise
        if old is not None:
            old.close()

    def _remove_socket_file(self) -> None:
        # Only our own socket: if another daemon has since bound the path
        # (after a forced start), its file has another inode.
        if self._inode is None:
            return
        with contextlib.suppress(FileNotFoundError):
            if os.stat(self._path).st_ino == self._inode:
                os.unlink(self._path)
                log.info("control_closed", path=str(self._path))
        self._inode = None

    # -- per connection ------------------------------------------------------

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        peer = peer_of(writer)
        admin = self._rights.allowed(peer, Right.CHANGE)
        client = _Client(task, peer.uid if peer else None, loop.time(), peer=peer, admin=admin)
        self._clients[task] = client
        try:
            if not self._make_room(client):
                log.warning("control_too_many_clients", limit=self._settings.max_clients)
                await self._send(
                    writer,
                    ErrorReply(
                        None,
                        f"too many huxleyctl clients (max {self._settings.max_clients}); try again",
                    ),
                )
                return
            await self._client_loop(reader, writer, client)
        except (ConnectionError, TimeoutError):
            pass  # the client left or stopped reading; nothing to answer
        except asyncio.CancelledError:
            # Only close() and _make_room cancel a client. Ending "cancelled"
            # would make asyncio's stream callback (3.11) log a traceback for
            # every connected client at each stop: end quietly instead.
            pass
        finally:
            self._clients.pop(task, None)
            writer.close()
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await writer.wait_closed()

    def _make_room(self, newcomer: _Client) -> bool:
        """Within the per-uid and total limits (readers: less the reserve), closing
        the longest-idle connection if needed. False: nothing may go, refuse."""
        others = [c for c in self._clients.values() if c is not newcomer and not c.evicted]
        same_uid = [c for c in others if c.uid == newcomer.uid]
        readers = [c for c in others if not c.admin]
        limit = self._settings.max_clients
        if len(same_uid) >= self._settings.max_clients_per_uid:
            return self._evict(same_uid, newcomer)
        if not newcomer.admin and len(readers) >= limit - reserve(limit):
            return self._evict(readers, newcomer)
        if len(others) >= limit:
            return self._evict(others, newcomer)
        return True

    def _evict(self, candidates: list[_Client], newcomer: _Client) -> bool:
        """Close the longest-idle of ``candidates`` (for an admin: a reader's first,
        a quiet watch included). False when none may be closed."""
        idle = [
            c
            for c in candidates
            if not c.task.done() and (not c.busy or (newcomer.admin and c.watching and not c.admin))
        ]
        if newcomer.admin:
            idle = [c for c in idle if not c.admin] or idle
        if not idle:
            return False
        victim = min(idle, key=lambda c: c.last_active)
        victim.evicted = True
        victim.task.cancel()
        self.evictions += 1
        log.warning(
            "control_client_evicted",
            uid=victim.uid,
            idle_s=round(asyncio.get_running_loop().time() - victim.last_active, 1),
            reason="room for an admin" if newcomer.admin and not victim.admin else "room",
        )
        return True

    async def _client_loop(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: _Client
    ) -> None:
        loop = asyncio.get_running_loop()
        line: bytes | object | None = None
        while True:
            if line is None:
                try:
                    async with asyncio.timeout(self._settings.idle_timeout_s):
                        line = await read_line(reader)
                except TimeoutError:
                    log.debug("control_client_idle", timeout_s=self._settings.idle_timeout_s)
                    return
            if line is None or line is GONE:
                return
            if line is TOO_LONG:
                line = None
                await self._send(
                    writer, ErrorReply(None, f"request longer than {MAX_LINE_BYTES} bytes")
                )
                continue
            assert isinstance(line, bytes)
            client.busy = True
            try:
                # A stream hands back what the client sent meanwhile (or GONE).
                line = await self._answer(line, reader, writer, client.peer, client)
            finally:
                client.busy = False
                client.last_active = loop.time()

    async def _answer(
        self,
        line: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: Peer | None = None,
        client: _Client | None = None,
    ) -> bytes | object | None:
        """Answer one request line, if the peer has the right to ask it. A
        stream returns the line that ended it (or ``GONE`` when the client
        left); any other request None."""
        try:
            request = parse_request(line)
        except ControlProtocolError as exc:
            log.debug("control_bad_request", error=str(exc))
            await self._send(writer, ErrorReply(exc.request_id, str(exc)))
            return None
        refusal = self._rights.refusal(peer, request)
        if refusal is not None:
            log.info("control_request_denied", cmd=request.cmd.value, uid=peer.uid if peer else -1)
            await self._send(writer, ErrorReply(request.id, refusal))
            return None
        log.debug("control_request", id=request.id, cmd=request.cmd.value)
        if request.cmd is Command.LEVELS:
            return await self._stream(request, reader, writer, self._handler.levels(), quiet=False)
        if request.cmd is Command.WATCH:
            if client is not None and not client.admin:
                refused = self._watch_refusal(client)
                if refused is not None:
                    await self._send(writer, ErrorReply(request.id, refused))
                    return None
            if client is not None:
                client.watching = True
            try:
                return await self._stream(
                    request, reader, writer, self._handler.watch(), quiet=True
                )
            finally:
                if client is not None:
                    client.watching = False
        reply: Reply
        try:
            async with asyncio.timeout(self._settings.request_timeout_s):
                reply = ResultReply(request.id, await self._dispatch(request))
        except Exception as exc:
            reply = self._failure(request, exc)
        await self._send(writer, reply)
        return None

    def _watch_refusal(self, client: _Client) -> str | None:
        """Why a reader may not open one more ``watch`` (None: it may)."""
        limit = self._settings.max_watches_per_uid
        held = sum(1 for c in self._clients.values() if c.uid == client.uid and c.watching)
        if held < limit:
            return None
        log.warning("control_watch_refused", uid=client.uid, limit=limit)
        return f"too many watch streams for uid {client.uid} (max {limit}); close one first"

    def _failure(self, request: Request, exc: Exception) -> ErrorReply:
        """The error reply for a handler failure (and a log line for surprises)."""
        cmd = request.cmd.value
        if isinstance(exc, TimeoutError):
            limit = self._settings.request_timeout_s
            log.warning("control_request_timeout", cmd=cmd, timeout_s=limit)
            return ErrorReply(request.id, f"{cmd} timed out after {limit:g} s")
        if isinstance(exc, CommandFailedError):
            log.info("control_request_refused", cmd=cmd, error=str(exc))
            return ErrorReply(request.id, str(exc))
        if isinstance(exc, HuxleydError):
            log.warning("control_request_failed", cmd=cmd, error=str(exc))
            return ErrorReply(request.id, str(exc) or type(exc).__name__)
        log.exception("control_handler_crashed", cmd=cmd, error_type=type(exc).__name__)
        return ErrorReply(request.id, f"internal error in {cmd} (see journalctl -u huxleyd)")

    async def _dispatch(self, request: Request) -> dict[str, Any]:
        handler, args = self._handler, request.args
        match request.cmd:
            case Command.STATUS:
                return (await handler.status()).to_dict()
            case Command.VOLUME:
                assert isinstance(args, VolumeArgs)
                if args.level is None:
                    return {"volume": await handler.get_volume()}
                return {"volume": await handler.set_volume(args.level)}
            case Command.MUTE:
                assert isinstance(args, MuteArgs)
                if args.muted is None:
                    return {"muted": await handler.get_muted()}
                return {"muted": await handler.set_muted(args.muted)}
            case Command.SAY:
                assert isinstance(args, SayArgs)
                return {"turn_id": await handler.say(args.text)}
            case Command.STOP:
                return {"stopped": await handler.stop()}
            case Command.SKILLS:
                return {"skills": [s.to_dict() for s in await handler.skills()]}
            case Command.PTT:
                assert isinstance(args, PttArgs)
                await handler.ptt(args.action)
                return {"action": args.action.value}
            case Command.DOCTOR:
                return {"checks": [c.to_dict() for c in await handler.doctor()]}
            case Command.EVENT:
                assert isinstance(args, EventArgs)
                return {"delivered": await handler.client_event(args.key, args.data)}
            case Command.ANNOUNCE:
                assert isinstance(args, AnnounceArgs)
                if not isinstance(handler, Announcer):
                    raise CommandFailedError("this daemon has no household (no [mqtt])")
                return {"rooms": await handler.announce(args.text, args.room)}
        raise ControlError(f"no dispatch for {request.cmd}")  # pragma: no cover

    async def _stream(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        samples: AsyncIterator[Encodable],
        *,
        quiet: bool,
    ) -> bytes | object | None:
        """Answer ``request`` with ``samples`` (:func:`~huxleyd.control.streams.stream`);
        ``quiet``: it may say nothing for a long time (``watch``), otherwise each
        item must come within the request timeout."""
        return await stream(
            request,
            reader,
            samples,
            send=functools.partial(self._send, writer),
            failure=functools.partial(self._failure, request),
            timeout_s=None if quiet else self._settings.request_timeout_s,
        )

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        try:
            data = reply.encode()
        except (TypeError, ValueError) as exc:
            log.error("control_unencodable_reply", error=str(exc))
            data = ErrorReply(reply.id, "internal error: the reply was not JSON").encode()
        writer.write(data)
        # A client that stops reading must not pin this task forever.
        async with asyncio.timeout(self._settings.request_timeout_s):
            await writer.drain()
