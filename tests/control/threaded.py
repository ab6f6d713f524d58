"""A ControlServer on its own event loop in a thread, for tests that run
``huxleyctl`` as a subprocess (or a blocking client) against it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from huxleyd.control.handler import ControlHandler
from huxleyd.control.server import ControlServer
from huxleyd.control.settings import ControlSettings


@contextmanager
def serve_in_thread(handler: ControlHandler, settings: ControlSettings) -> Iterator[ControlServer]:
    loop = asyncio.new_event_loop()
    server = ControlServer(handler, settings)
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
