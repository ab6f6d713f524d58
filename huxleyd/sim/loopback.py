"""The lifecycle the simulators share: start, close, ``async with``, the port.

Layer: adapter (websockets 15 asyncio server). A subclass says what to do
with a handshake (:meth:`LoopbackServer._check_request`) and a connection
(:meth:`LoopbackServer._handle`); this base starts and stops the listening
socket, works as ``async with``, and tells the port it was given (port 0
picks a free one, so tests never collide). websockets' own log lines go to
``huxleyd.sim.websocket``, handshake secrets redacted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from huxleyd.providers.transport import websocket_logger

DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
"""websockets' own default for an incoming message."""


class StartsAndCloses(ABC):
    """``async with`` runs :meth:`start` on entry and :meth:`close` on exit."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def close(self) -> None:
        """Stop; idempotent."""


class LoopbackServer(StartsAndCloses):
    """A websocket server on ``host:port``; ``async with`` starts and closes it."""

    def __init__(
        self, *, host: str, port: int = 0, max_size: int = DEFAULT_MAX_MESSAGE_BYTES
    ) -> None:
        self._host = host
        self._port = port
        self._max_size = max_size
        self._server: Server | None = None

    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self._host,
            self._port,
            process_request=self._check_request,
            max_size=self._max_size,
            logger=websocket_logger("huxleyd.sim.websocket"),
        )

    async def close(self) -> None:
        """Stop listening and close every connection; idempotent."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    @property
    def port(self) -> int:
        """The port listened on. RuntimeError before :meth:`start`."""
        if self._server is None:
            raise RuntimeError(f"{self._what()} is not started")
        return int(next(iter(self._server.sockets)).getsockname()[1])

    def _what(self) -> str:
        return "the simulator"

    @abstractmethod
    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """The opening handshake: None accepts it, a response refuses it."""

    @abstractmethod
    async def _handle(self, connection: ServerConnection) -> None:
        """One accepted connection, until it closes."""
