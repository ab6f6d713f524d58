"""Fakes of the systemd notify seam.

- :class:`RecordingNotifier` stands for the daemon's notifier object (what
  the runtime would send to systemd, kept as dicts).
- :class:`NotifyListener` is the other end of a real ``NOTIFY_SOCKET``: it
  receives the datagrams as PID 1 does; :func:`path_listener` binds one on a
  path (the fixtures in ``tests/app/conftest.py``, the skill host's tests).
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from huxleyd.app.systemd import Notifier


class RecordingNotifier(Notifier):
    """The daemon's notifier with the socket taken out: every message is kept as a
    dict, composed by the real ``ready``/``status``/``stopping``/``watchdog``."""

    def __init__(self) -> None:
        super().__init__(env={})
        self.sent: list[dict[str, str]] = []

    def send(self, **fields: str) -> bool:
        self.sent.append(fields)
        return True


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


@contextmanager
def path_listener() -> Iterator[NotifyListener]:
    """A :class:`NotifyListener` bound on a path, removed afterwards."""
    # Not pytest's tmp_path: AF_UNIX paths are limited to 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="hxn"))
    path = folder / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    try:
        yield NotifyListener(sock, str(path))
    finally:
        sock.close()
        shutil.rmtree(folder)
