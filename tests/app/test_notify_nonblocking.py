"""sd_notify never blocks the caller, even when nobody reads the socket."""

from __future__ import annotations

import socket
from pathlib import Path

from huxleyd.app.systemd import Notifier


def test_a_full_notify_socket_drops_instead_of_blocking(tmp_path: Path) -> None:
    path = tmp_path / "notify.sock"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    try:
        notifier = Notifier({"NOTIFY_SOCKET": str(path)})
        # With a blocking send this loop would hang at the first full queue.
        results = [notifier.status(f"message {i}") for i in range(5000)]
        assert results[0] is True
        assert False in results, "the queue filled up and later messages were dropped"
    finally:
        receiver.close()
