"""A ControlServer on its own event loop in a thread, for tests that run
``huxleyctl`` as a subprocess (:func:`huxleyctl`) or a blocking client against it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.handler import ControlHandler
from huxleyd.control.rights import Group, Rights
from huxleyd.control.server import ControlServer

READERS_GID, OPERATORS_GID = 64001, 64002
"""Made-up gids: a forked client joins them with setgroups(), the server sees them."""
TEST_RIGHTS = Rights(
    daemon_uid=os.geteuid(),
    readers=Group("huxley-control", READERS_GID),
    operators=Group("huxley-operator", OPERATORS_GID),
)


@contextmanager
def serve_in_thread(
    handler: ControlHandler, settings: ControlSettings, *, rights: Rights | None = None
) -> Iterator[ControlServer]:
    loop = asyncio.new_event_loop()
    server = ControlServer(handler, settings, rights=rights)
    loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, name="control-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


ROOT = Path(__file__).resolve().parents[2]


def huxleyctl(
    *args: str, socket_path: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "huxleyd.control.cli"]
    if socket_path is not None:
        argv += ["--socket", str(socket_path)]
    return subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "120", **(env or {})},
    )
