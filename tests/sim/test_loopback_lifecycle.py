"""The simulators' shared lifecycle: a free port from port 0, the handshake
hook that may refuse, ``async with`` that starts and closes, an idempotent
close, and no port before the start."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import InvalidStatus
from websockets.http11 import Request, Response

from huxleyd.sim.loopback import LoopbackServer


class Echo(LoopbackServer):
    """Echoes each message on ``/echo``; refuses any other path with a 404."""

    def __init__(self) -> None:
        super().__init__(host="127.0.0.1")
        self.paths: list[str] = []

    def _what(self) -> str:
        return "the echo server"

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        self.paths.append(request.path)
        if request.path != "/echo":
            return connection.respond(HTTPStatus.NOT_FOUND, "no\n")
        return None

    async def _handle(self, connection: ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)


async def test_port_zero_picks_a_free_port_for_each_server() -> None:
    async with Echo() as one, Echo() as two:
        assert one.port != two.port and one.port > 0
        async with connect(f"ws://127.0.0.1:{one.port}/echo") as ws:
            await ws.send("hello")
            assert await ws.recv() == "hello"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"ws://127.0.0.1:{two.port}/other"):
                pass
        assert refused.value.response.status_code == 404
        assert two.paths == ["/other"]


async def test_no_port_before_the_start_and_after_the_close() -> None:
    server = Echo()
    with pytest.raises(RuntimeError, match="the echo server is not started"):
        _ = server.port
    await server.start()
    port = server.port
    await server.close()
    await server.close()  # idempotent
    with pytest.raises(RuntimeError):
        _ = server.port
    with pytest.raises(OSError):
        async with connect(f"ws://127.0.0.1:{port}/echo", open_timeout=5):
            pass
