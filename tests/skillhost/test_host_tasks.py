"""A skill's background task in the host process: restarted when it crashes,
ended when it is cancelled, even when the skill's library turns the cancel
into an error of its own (anyio's task group raises its children's errors, a
client's ``__aexit__`` its failed disconnect). Taken for a crash, that cancel
would be spent on a restart, and the host's stop would wait for the task for
ever. Real frames on a real socket pair (the daemon's side reads nothing).
"""

from __future__ import annotations

import asyncio
import socket

from huxleyd.skillhost.hostpath.huxley_skillhost import child
from huxleyd.skillhost.hostpath.huxley_skillhost.wire import Link


async def _turns(n: int = 10) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_cancel_the_task_turns_into_an_error_still_ends_it() -> None:
    host_sock, daemon_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    _, host_writer = await asyncio.open_unix_connection(sock=host_sock)
    host = child.Host(Link(host_writer))
    runs = 0
    as_error = True

    async def body() -> None:
        nonlocal runs
        runs += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if as_error:
                raise RuntimeError("the connection broke while closing") from None
            raise

    handle = host.background_task("link", body)
    try:
        await _turns()
        handle.cancel()
        await _turns()
        # Without the guard it is backing off (TASK_DELAYS_S[0]) to run it again.
        assert (handle.done(), runs) == (True, 1)
    finally:  # a task left restarting would outlive the test's loop
        as_error = False
        for task in host._background:
            task.cancel()
        await asyncio.gather(*host._background, return_exceptions=True)
        host_writer.close()
        daemon_sock.close()
