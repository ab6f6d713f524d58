"""Skill hosts that systemd starts as the skill user: the daemon's side.

Under systemd the daemon cannot switch users (``NoNewPrivileges=yes``, no
capabilities), so it never starts a host itself. It connects to
``huxleyd-skillhost.socket`` (``Accept=yes``, only the daemon's user may
connect); systemd starts one ``huxleyd-skillhost@.service`` per connection
as ``huxley-skills``, sandboxed in a unit of its own (its own memory and
task limits, no view of the key, the daemon's state or /run/huxleyd), and
:mod:`huxleyd.skillhost.hostexec` turns it into a host on that connection.

The daemon sends the mode (``host`` or ``inventory``) and reads back the
host's pid. It cannot signal a process of another user, so ending a host
is closing its connection (the host ends when its link closes); a host
whose loop hangs stops pinging its unit's watchdog and systemd kills it.
Its exit is seen through a pidfd; its status and stderr are in its unit's
journal (``journalctl -u 'huxleyd-skillhost@*'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import socket
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from huxleyd.errors import SkillHostError
from huxleyd.skillhost.process import Started

SOCKET_VARIABLE = "HUXLEYD_SKILLHOST_SOCKET"
"""Names the activation socket (tests; the unit's is :data:`SOCKET`)."""
SOCKET = Path("/run/huxleyd-skills/link")
"""``ListenStream=`` of systemd/huxleyd-skillhost.socket."""
HELLO_DEADLINE_S = 10.0
"""From connecting to the host's ``pid N`` line: systemd starts a unit and a Python."""
JOURNAL = "journalctl -u 'huxleyd-skillhost@*'"
UNKNOWN_STATUS = -1
"""What :meth:`ActivatedProcess.wait` returns: the status is the unit's, not ours to see."""


def activation_socket(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    explicit = env.get(SOCKET_VARIABLE)
    return Path(explicit) if explicit else SOCKET


def parse_hello(line: bytes, path: Path) -> int:
    """The host's pid from its first line; SkillHostError naming what came instead."""
    words = line.decode("ascii", errors="replace").split()
    if len(words) == 2 and words[0] == "pid" and words[1].isdigit():
        return int(words[1])
    raise SkillHostError(
        f"the skill host socket {path} answered {line[:40]!r}, expected 'pid N' "
        f"(the host's errors: {JOURNAL})"
    )


class ActivatedProcess:
    """A host systemd started: seen through a pidfd, ended by closing its link."""

    stderr: asyncio.StreamReader | None = None
    """Its stderr is its unit's journal."""

    def __init__(self, pid: int, writer: asyncio.StreamWriter) -> None:
        self.pid = pid
        self._writer = writer
        self._exited = False
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            self._pidfd = None  # already gone (or reused): treat as exited
            self._exited = True
        else:
            weakref.finalize(self, _close_quietly, self._pidfd)

    @property
    def returncode(self) -> int | None:
        if not self._exited and self._pidfd is not None:
            readable, _, _ = select.select([self._pidfd], [], [], 0)
            self._exited = bool(readable)
        return UNKNOWN_STATUS if self._exited else None

    def kill(self) -> None:
        """SIGKILL when allowed (the daemon as root), and close the link in any case."""
        if self._pidfd is not None and not self._exited:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        sock = self._writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    async def wait(self) -> int:
        if self.returncode is None and self._pidfd is not None:
            loop = asyncio.get_running_loop()
            exited: asyncio.Future[None] = loop.create_future()

            def readable() -> None:
                if not exited.done():
                    exited.set_result(None)

            loop.add_reader(self._pidfd, readable)
            try:
                await exited
            finally:
                loop.remove_reader(self._pidfd)
            self._exited = True
        return UNKNOWN_STATUS

    def exit_words(self, code: int) -> str:
        return f"its status is in {JOURNAL}"


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


@dataclass(frozen=True, slots=True)
class ActivatedLauncher:
    """Hosts from ``huxleyd-skillhost.socket``: systemd starts each as ``user``."""

    path: Path
    user: str | None = None
    hello_deadline_s: float = HELLO_DEADLINE_S
    makes_data_dirs: ClassVar[bool] = False
    """The host creates its own data folder: the daemon cannot write where the skill user owns."""

    @property
    def uid(self) -> int | None:
        return None  # the daemon never switches users for it, nor chowns for it

    @property
    def gid(self) -> int | None:
        return None

    async def start(self) -> Started:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.path)), self.hello_deadline_s
            )
        except (OSError, TimeoutError) as exc:
            raise SkillHostError(f"cannot reach the skill host socket {self.path}: {exc}") from exc
        try:
            writer.write(b"host\n")
            line = await asyncio.wait_for(reader.readline(), self.hello_deadline_s)
            pid = parse_hello(line, self.path)
        except (OSError, TimeoutError, SkillHostError) as exc:
            writer.close()
            if isinstance(exc, SkillHostError):
                raise
            raise SkillHostError(
                f"no skill host answered on {self.path} within {self.hello_deadline_s:g} s ({JOURNAL})"
            ) from exc
        return Started(ActivatedProcess(pid, writer), reader, writer)

    def inventory(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        data = b""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout_s)
                sock.connect(str(self.path))
                sock.sendall(b"inventory\n")
                while chunk := sock.recv(65536):
                    data += chunk
                    sock.settimeout(max(0.01, deadline - time.monotonic()))
        except OSError as exc:  # TimeoutError included
            raise SkillHostError(
                f"cannot list the skills through {self.path}: {exc} ({JOURNAL})"
            ) from exc
        hello, _, listed = data.partition(b"\n")
        parse_hello(hello + b"\n", self.path)
        if not listed.strip():
            raise SkillHostError(f"the skill host listed nothing; its errors are in {JOURNAL}")
        return listed.decode(errors="replace")
