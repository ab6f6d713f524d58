"""The control socket's file is watched: one removed (or its folder) comes back.

Layer: control (asyncio). ``rm -r /run/huxleyd`` (or a tmpfiles clean-up)
leaves the daemon listening on a socket nobody can reach, and ``huxleyctl``
then says "not running". :func:`watch_socket_path` looks every
``interval_s`` (injected in tests) and, when the file is gone, re-creates the
folder and listens again, with one ``control_socket_recreated`` line. A
different file in its place is someone else's: it is named once
(``control_socket_taken``) and left alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from huxleyd.control.server import ControlServer
from huxleyd.errors import HuxleydError
from huxleyd.logs import get_logger

log = get_logger("huxleyd.control")

WATCH_INTERVAL_S = 5.0
"""How often the socket's path is looked at (a stat; nothing else)."""


async def watch_socket_path(
    server: ControlServer,
    *,
    interval_s: float = WATCH_INTERVAL_S,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Until cancelled: keep ``server``'s socket file at its path (see the module)."""
    taken_said = False
    while True:
        await sleep(interval_s)
        ours = server.path_is_ours()
        if ours:
            taken_said = False
            continue
        if ours is None:
            if not taken_said:
                log.error("control_socket_taken", path=str(server.path), effect="left alone")
                taken_said = True
            continue
        folder_gone = not server.path.parent.exists()
        try:
            await server.rebind()
        except (OSError, HuxleydError) as exc:
            log.error("control_socket_recreate_failed", path=str(server.path), error=str(exc))
            continue
        log.warning(
            "control_socket_recreated",
            path=str(server.path),
            reason="its folder was removed" if folder_gone else "the socket file was removed",
        )
