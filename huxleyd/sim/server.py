"""The simulator's websocket server on loopback.

Layer: adapter (websockets 15 asyncio server) around :class:`SimSession`.

::

    async with SimServer(scenario=load_scenario(path), speed=20) as sim:
        client connects to sim.url                # ws://127.0.0.1:PORT/v1/realtime
        ...
        assert sim.violations == []

It serves ``/v1/realtime?model=…`` only (404 elsewhere, 400 without a model),
checks ``Authorization: Bearer <api_key>`` when given an ``api_key`` (401
otherwise), and records a violation when a client sends the beta
``OpenAI-Beta`` header. Speech is paced: one delta per ``chunk_ms`` of audio,
sent every ``chunk_ms / speed`` (``speed=math.inf``: no waiting at all).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from huxley_sdk.logging import get_logger
from huxleyd.providers.transport import websocket_logger
from huxleyd.sim.record import Script, SimRecord, Truncation, Violation
from huxleyd.sim.scenario import Scenario, load_scenario
from huxleyd.sim.session import SimSession
from huxleyd.sim.speech import SynthMode

PATH = "/v1/realtime"

_log = get_logger("huxleyd.sim")


@dataclass(frozen=True, slots=True)
class Handshake:
    """One accepted or refused opening handshake (the key itself is not kept)."""

    path: str
    model: str | None
    user_agent: str | None
    authorized: bool
    status: int


class SimServer:
    """A local OpenAI Realtime GA peer that answers from a scenario. Not an AI."""

    def __init__(
        self,
        scenario: Scenario | Path | None = None,
        *,
        speed: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        chunk_ms: int = 40,
        synth: SynthMode = "auto",
    ) -> None:
        if isinstance(scenario, Path):
            scenario = load_scenario(scenario)
        if not speed > 0:
            raise ValueError(f"speed must be > 0 (math.inf for no pacing), got {speed}")
        if not 10 <= chunk_ms <= 1000:
            raise ValueError(f"chunk_ms must be between 10 and 1000, got {chunk_ms}")
        self.scenario = scenario or Scenario()
        self.record = SimRecord(Script(self.scenario))
        self.handshakes: list[Handshake] = []
        self._speed = speed
        self._host = host
        self._port = port
        self._api_key = api_key
        self._chunk_ms = chunk_ms
        self._synth: SynthMode = synth
        self._server: Server | None = None
        self._connections: set[ServerConnection] = set()

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self._host,
            self._port,
            process_request=self._check_request,
            max_size=16 * 1024 * 1024,
            logger=websocket_logger("huxleyd.sim.websocket"),
        )
        _log.info(
            "sim_started",
            url=self.url,
            scenario=self.scenario.name,
            note="a protocol simulator, not an AI: it plays back a script",
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulator is not started")
        socket = next(iter(self._server.sockets))
        return int(socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        """``ws://127.0.0.1:PORT/v1`` (the openai SDK's ``websocket_base_url``)."""
        return f"ws://{self._host}:{self.port}/v1"

    @property
    def url(self) -> str:
        """``ws://127.0.0.1:PORT/v1/realtime`` (append ``?model=…``)."""
        return self.base_url + "/realtime"

    # ------------------------------------------------------------ records

    @property
    def received(self) -> list[Any]:
        return self.record.received

    @property
    def raw(self) -> list[dict[str, Any]]:
        """The received client events as dicts (only the keys the client sent)."""
        return self.record.raw

    @property
    def violations(self) -> list[Violation]:
        return self.record.violations

    @property
    def truncations(self) -> list[Truncation]:
        return self.record.truncations

    @property
    def connection_count(self) -> int:
        return self.record.connection_count

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
        await self.record.wait_until(predicate, timeout_s)

    async def drop_connections(self) -> None:
        """Cut every connection without a close frame, like a network failure."""
        for connection in list(self._connections):
            connection.transport.abort()
        await self.wait_until(lambda: not self._connections)

    # ------------------------------------------------------------ websocket

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        model = _model_of(url.query)
        authorized = self._authorized(request.headers)
        status = HTTPStatus.SWITCHING_PROTOCOLS
        response: Response | None = None
        if url.path != PATH:
            status = HTTPStatus.NOT_FOUND
            response = connection.respond(status, f"no realtime endpoint at {url.path}\n")
        elif model is None:
            status = HTTPStatus.BAD_REQUEST
            response = connection.respond(status, "missing the model query parameter\n")
        elif not authorized:
            status = HTTPStatus.UNAUTHORIZED
            response = connection.respond(status, "Incorrect API key provided.\n")
        if "OpenAI-Beta" in request.headers:
            self.record.violation("handshake", "OpenAI-Beta header: a beta client, not GA")
        self.handshakes.append(
            Handshake(request.path, model, request.headers.get("User-Agent"), authorized, status)
        )
        return response

    def _authorized(self, headers: Headers) -> bool:
        if self._api_key is None:
            return True
        return headers.get("Authorization") == f"Bearer {self._api_key}"

    async def _handle(self, connection: ServerConnection) -> None:
        self._connections.add(connection)
        self.record.connection_count += 1
        request = connection.request
        query = urlsplit(request.path).query if request is not None else ""
        model = _model_of(query)
        session = SimSession(
            record=self.record,
            send=connection.send,
            abort=connection.transport.abort,
            model=model or "gpt-realtime",
            speed=self._speed,
            chunk_ms=self._chunk_ms,
            synth=self._synth,
        )
        try:
            await session.start()
            async for frame in connection:
                await session.handle(frame)
        except ConnectionClosed:
            pass
        finally:
            session.close()
            self._connections.discard(connection)
            self.record.changed()


def _model_of(query: str) -> str | None:
    models = parse_qs(query).get("model")
    return models[0] if models else None
