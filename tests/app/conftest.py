"""A real NOTIFY_SOCKET: a unix datagram socket that records what systemd would get."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


class NotifyListener:
    """Receives sd_notify datagrams the way PID 1 does."""

    def __init__(self, sock: socket.socket, env_value: str) -> None:
        self.sock = sock
        self.env_value = env_value
        """What NOTIFY_SOCKET must say to reach this listener."""

    def receive(self, timeout_s: float = 2.0) -> str:
        self.sock.settimeout(timeout_s)
        return self.sock.recv(4096).decode()

    def drain(self) -> list[str]:
        """Every datagram already queued, without waiting."""
        self.sock.setblocking(False)
        got = []
        while True:
            try:
                got.append(self.sock.recv(4096).decode())
            except BlockingIOError:
                return got


@pytest.fixture
def notify_socket() -> Iterator[NotifyListener]:
    # Not tmp_path: AF_UNIX paths are limited to 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="hxn"))
    path = folder / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    yield NotifyListener(sock, str(path))
    sock.close()
    shutil.rmtree(folder)


@pytest.fixture
def abstract_notify_socket() -> Iterator[NotifyListener]:
    name = f"huxleyd-test-{os.getpid()}-{os.urandom(4).hex()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    yield NotifyListener(sock, "@" + name)
    sock.close()
