"""Fixtures: a real NOTIFY_SOCKET (a unix datagram socket that records what systemd
would get), read through :class:`tests.fakes.notify.NotifyListener`."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from tests.fakes.notify import NotifyListener, path_listener


@pytest.fixture
def notify_socket() -> Iterator[NotifyListener]:
    with path_listener() as listener:
        yield listener


@pytest.fixture
def abstract_notify_socket() -> Iterator[NotifyListener]:
    name = f"huxleyd-test-{os.getpid()}-{os.urandom(4).hex()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    yield NotifyListener(sock, "@" + name)
    sock.close()
