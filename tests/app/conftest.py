"""Fixtures: a real NOTIFY_SOCKET (a unix datagram socket that records what systemd
would get), read through :class:`tests.fakes.notify.NotifyListener`."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.notify import NotifyListener


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
