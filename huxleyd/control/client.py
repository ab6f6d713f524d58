"""A synchronous control socket client (what ``huxleyctl`` uses).

Blocking sockets, no asyncio: a command is one request and one reply.
Typed helpers return the report dataclasses of :mod:`huxleyd.control.handler`::

    with ControlClient(Path("/run/huxleyd/control.sock")) as client:
        print(client.status().state)
        client.set_volume(30)
        for sample in client.levels(count=10):
            ...

Errors: :class:`DaemonUnreachableError` (no socket, nobody listening,
permission denied, connection lost, no answer in time),
:class:`CommandFailedError` (the daemon said ``ok: false``; its message),
:class:`ControlProtocolError` (the daemon's reply broke the wire format).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from huxleyd.control.errors import (
    CommandFailedError,
    ControlProtocolError,
    DaemonUnreachableError,
)
from huxleyd.control.handler import DoctorCheck, LevelsSample, SkillInfo, StatusReport
from huxleyd.control.protocol import (
    AnnounceArgs,
    Args,
    Command,
    DoneReply,
    ErrorReply,
    EventArgs,
    LevelsArgs,
    MuteArgs,
    NoArgs,
    PttAction,
    PttArgs,
    Request,
    ResultReply,
    SayArgs,
    VolumeArgs,
    parse_reply,
)
from huxleyd.control.watch import WatchEvent

MAX_REPLY_BYTES = 4 * 1024 * 1024
"""A reply line longer than this is refused (a broken daemon must not eat our memory)."""


class ControlClient:
    """One connection to the daemon. Not thread-safe; one command at a time."""

    def __init__(
        self, path: Path, *, timeout_s: float = 30.0, group: str | None = "huxley"
    ) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._group = group
        self._sock: socket.socket | None = None
        self._reader: BinaryIO | None = None
        self._next_id = 1

    def __enter__(self) -> ControlClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        """Open the connection. Raises :class:`DaemonUnreachableError` with the reason."""
        if self._sock is not None:
            return
        deadline = time.monotonic() + self.timeout_s
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout_s)
            try:
                sock.connect(str(self.path))
                break
            except BlockingIOError as exc:  # the listen queue is full (a burst): again
                sock.close()
                if time.monotonic() >= deadline:
                    raise self._unreachable(exc) from exc
                time.sleep(0.01)
            except BaseException as exc:
                sock.close()
                raise self._unreachable(exc) from exc
        self._sock = sock
        self._reader = sock.makefile("rb")

    def _unreachable(self, exc: BaseException) -> DaemonUnreachableError:
        path = self.path
        if isinstance(exc, FileNotFoundError):
            return DaemonUnreachableError(f"huxleyd is not running (no socket at {path})")
        if isinstance(exc, ConnectionRefusedError):
            return DaemonUnreachableError(f"huxleyd is not running (stale socket at {path})")
        if isinstance(exc, PermissionError):
            group = self._group or "socket's"
            return DaemonUnreachableError(
                f"permission denied on {path}: add yourself to the {group} group"
            )
        if isinstance(exc, TimeoutError):
            return DaemonUnreachableError(f"huxleyd is not answering on {path}")
        if isinstance(exc, OSError):
            return DaemonUnreachableError(f"cannot connect to {path}: {exc.strerror or exc}")
        return DaemonUnreachableError(f"cannot connect to {path}: {exc}")

    def close(self) -> None:
        reader, sock = self._reader, self._sock
        self._reader = self._sock = None
        if reader is not None:
            reader.close()
        if sock is not None:
            sock.close()

    # -- raw requests ----------------------------------------------------------

    def _send(self, cmd: Command, args: Args) -> int:
        self.connect()
        assert self._sock is not None
        rid = self._next_id
        self._next_id += 1
        try:
            self._sock.sendall(Request(rid, cmd, args).encode())
        except OSError as exc:
            raise DaemonUnreachableError(f"lost the connection to huxleyd: {exc}") from exc
        return rid

    def _recv(
        self, rid: int, *, timeout_s: float | None = None, block: bool = False
    ) -> ResultReply | DoneReply:
        """The next reply for ``rid``; raises on ``ok: false`` and on a wrong id.

        ``block``: wait as long as it takes (a quiet stream; a daemon that
        stops closes the socket, which ends the wait)."""
        assert self._sock is not None and self._reader is not None
        self._sock.settimeout(None if block else self.timeout_s if timeout_s is None else timeout_s)
        try:
            line = self._reader.readline(MAX_REPLY_BYTES + 1)
        except TimeoutError:
            raise  # the caller decides: an error, or the end of a timed stream
        except OSError as exc:
            raise DaemonUnreachableError(f"lost the connection to huxleyd: {exc}") from exc
        if not line.endswith(b"\n"):
            if len(line) > MAX_REPLY_BYTES:
                raise ControlProtocolError(f"reply longer than {MAX_REPLY_BYTES} bytes")
            raise DaemonUnreachableError("huxleyd closed the connection (did it stop?)")
        reply = parse_reply(line)
        if isinstance(reply, ErrorReply):
            # id None: the daemon could not tie the error to a request
            # (too many clients, an unreadable line); it is still ours.
            if reply.id not in (rid, None):
                raise ControlProtocolError(f"reply for request {reply.id}, expected {rid}")
            raise CommandFailedError(reply.error)
        if reply.id != rid:
            raise ControlProtocolError(f"reply for request {reply.id}, expected {rid}")
        return reply

    def call(self, cmd: Command, args: Args | None = None) -> Mapping[str, Any]:
        """Send one request, return its ``result``."""
        rid = self._send(cmd, args or NoArgs())
        try:
            reply = self._recv(rid)
        except TimeoutError as exc:
            self.close()  # a late reply would be read as the next one's
            raise DaemonUnreachableError(
                f"no answer from huxleyd within {self.timeout_s:g} s"
            ) from exc
        if isinstance(reply, DoneReply):
            raise ControlProtocolError(f"{cmd} answered 'done' without a result")
        return reply.result

    def stream(
        self,
        cmd: Command,
        args: Args | None = None,
        *,
        duration_s: float | None = None,
        quiet_ok: bool = False,
    ) -> Iterator[Mapping[str, Any]]:
        """Send one streaming request; yield each result until ``done``, or
        until ``duration_s`` has passed (then the connection is closed, which
        tells the daemon to stop). ``quiet_ok``: silence longer than the
        timeout is normal (``watch``); a daemon that stops still ends it."""
        rid = self._send(cmd, args or NoArgs())
        deadline = None if duration_s is None else time.monotonic() + duration_s
        finished = False
        try:
            while True:
                wait_s = self.timeout_s
                if deadline is not None:
                    # a quiet stream may wait until the deadline, however far
                    wait_s = deadline - time.monotonic()
                    wait_s = wait_s if quiet_ok else min(wait_s, self.timeout_s)
                    if wait_s <= 0:
                        return
                try:
                    # A timed-out socket file cannot be read again, so a
                    # quiet stream blocks rather than retrying after a timeout.
                    block = quiet_ok and deadline is None
                    reply = self._recv(rid, timeout_s=wait_s, block=block)
                except TimeoutError as exc:
                    if deadline is not None and time.monotonic() >= deadline - 1e-3:
                        return
                    raise DaemonUnreachableError(
                        f"no {cmd} data from huxleyd within {self.timeout_s:g} s"
                    ) from exc
                if isinstance(reply, DoneReply):
                    finished = True
                    return
                yield reply.result
        finally:
            if not finished:
                # A stream cut short leaves replies in flight, so the
                # connection cannot be reused; closing it stops the daemon's side.
                self.close()

    # -- typed commands ----------------------------------------------------------

    def status(self) -> StatusReport:
        return StatusReport.from_dict(self.call(Command.STATUS))

    def get_volume(self) -> int:
        return _int(self.call(Command.VOLUME, VolumeArgs()), "volume")

    def set_volume(self, level: int) -> int:
        return _int(self.call(Command.VOLUME, VolumeArgs(level)), "volume")

    def muted(self, set_to: bool | None = None) -> bool:
        """The microphone mute, after setting it to ``set_to`` (None: only read it)."""
        result = self.call(Command.MUTE, MuteArgs(set_to))
        value = result.get("muted")
        if not isinstance(value, bool):
            raise ControlProtocolError(f"reply 'muted' expected true or false, got {value!r}")
        return value

    def say(self, text: str) -> str:
        turn = self.call(Command.SAY, SayArgs(text)).get("turn_id")
        if not isinstance(turn, str):
            raise ControlProtocolError(f"say: 'turn_id' expected a string, got {turn!r}")
        return turn

    def announce(self, text: str, room: str | None) -> list[str]:
        """Speak ``text`` on ``room``'s speaker (None: all); one line per room."""
        rooms = self.call(Command.ANNOUNCE, AnnounceArgs(text, room)).get("rooms")
        if not isinstance(rooms, list) or not all(isinstance(r, str) for r in rooms):
            raise ControlProtocolError(f"announce: 'rooms' expected strings, got {rooms!r}")
        return rooms

    def stop(self) -> bool:
        stopped = self.call(Command.STOP).get("stopped")
        if not isinstance(stopped, bool):
            raise ControlProtocolError(f"stop: 'stopped' expected true or false, got {stopped!r}")
        return stopped

    def skills(self) -> list[SkillInfo]:
        return [SkillInfo.from_dict(s) for s in _list(self.call(Command.SKILLS), "skills")]

    def ptt(self, action: PttAction) -> None:
        self.call(Command.PTT, PttArgs(action))

    def levels(
        self, *, count: int | None = None, duration_s: float | None = None
    ) -> Iterator[LevelsSample]:
        for result in self.stream(Command.LEVELS, LevelsArgs(count), duration_s=duration_s):
            yield LevelsSample.from_dict(result)

    def watch(
        self, *, count: int | None = None, duration_s: float | None = None
    ) -> Iterator[WatchEvent]:
        """What happens in the daemon from now on (see :mod:`huxleyd.control.watch`)."""
        args = LevelsArgs(count)
        for result in self.stream(Command.WATCH, args, duration_s=duration_s, quiet_ok=True):
            yield WatchEvent.from_dict(result)

    def doctor(self) -> list[DoctorCheck]:
        return [DoctorCheck.from_dict(c) for c in _list(self.call(Command.DOCTOR), "checks")]

    def client_event(self, key: str, data: dict[str, Any] | None = None) -> list[str]:
        """Send a client event; the skills that handled it."""
        delivered = self.call(Command.EVENT, EventArgs(key, dict(data or {}))).get("delivered")
        if not isinstance(delivered, list) or not all(isinstance(s, str) for s in delivered):
            raise ControlProtocolError(
                f"event: 'delivered' expected a list of names, got {delivered!r}"
            )
        return delivered


def _int(result: Mapping[str, Any], key: str) -> int:
    value = result.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlProtocolError(f"{key!r} expected an integer, got {value!r}")
    return value


def _list(result: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = result.get(key)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ControlProtocolError(f"{key!r} expected a list of objects, got {value!r}")
    return value
