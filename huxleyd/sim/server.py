"""The simulator's websocket server on loopback, in three dialects.

Layer: adapter (websockets 15 asyncio server) around one session class per
dialect, chosen by the URL path:

- ``/v1/realtime?model=…``: OpenAI Realtime GA (:class:`SimSession`);
- ``/xai/v1/realtime``: xAI's voice agent dialect (:class:`XaiSimSession`);
- ``/ws/google.ai.generativelanguage.{v1beta,v1alpha,v1}.GenerativeService.BidiGenerateContent``:
  Gemini Live (:class:`GeminiSimSession`).

All three answer from the same scenario, and share one script cursor and
one :class:`SimRecord`::

    async with SimServer(scenario=load_scenario(path), speed=20, dialect="gemini") as sim:
        client connects to sim.url                # that dialect's path
        ...
        assert sim.violations == []

Other paths get 404; OpenAI without a model 400. With an ``api_key`` it
checks ``Authorization: Bearer <key>`` (OpenAI, xAI) or ``x-goog-api-key`` /
``?key=`` (Gemini), 401 otherwise, and records a violation when a client
sends the beta ``OpenAI-Beta`` header. Speech is paced: one chunk per
``chunk_ms`` of audio, sent every ``chunk_ms / speed`` (``speed=math.inf``:
no waiting at all).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from huxleyd.logs import get_logger
from huxleyd.sim.gemini_session import GeminiSimSession
from huxleyd.sim.loopback import LoopbackServer
from huxleyd.sim.pacing import check_speed
from huxleyd.sim.record import Script, SimRecord, Truncation, Violation
from huxleyd.sim.scenario import Scenario, load_scenario
from huxleyd.sim.session import SimSession
from huxleyd.sim.speech import SynthMode
from huxleyd.sim.xai_session import XaiSimSession

SimDialect = Literal["openai", "xai", "gemini"]

PATHS: dict[SimDialect, str] = {
    "openai": "/v1/realtime",
    "xai": "/xai/v1/realtime",
    "gemini": "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
}
"""Where each dialect is served (the URL :attr:`SimServer.url` gives for it)."""

PATH = PATHS["openai"]

_GEMINI_PATH = re.compile(
    r"^/ws/google\.ai\.generativelanguage\.(v1beta|v1alpha|v1)"
    r"\.GenerativeService\.BidiGenerateContent$"
)


def dialect_of(path: str) -> SimDialect | None:
    """The dialect served at ``path`` (no query), or None."""
    if path == PATHS["openai"]:
        return "openai"
    if path == PATHS["xai"]:
        return "xai"
    return "gemini" if _GEMINI_PATH.match(path) else None


_log = get_logger("huxleyd.sim")


@dataclass(frozen=True, slots=True)
class Handshake:
    """One accepted or refused opening handshake (the key itself is not kept)."""

    path: str
    model: str | None
    user_agent: str | None
    authorized: bool
    status: int


class SimServer(LoopbackServer):
    """A local realtime peer that answers from a scenario. Not an AI.

    ``dialect`` only picks what :attr:`url` points at: every dialect is served
    at its own path whatever it is.
    """

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
        dialect: SimDialect = "openai",
    ) -> None:
        if dialect not in PATHS:
            raise ValueError(f"unknown dialect {dialect!r}; valid: {', '.join(PATHS)}")
        if isinstance(scenario, Path):
            scenario = load_scenario(scenario)
        if not 10 <= chunk_ms <= 1000:
            raise ValueError(f"chunk_ms must be between 10 and 1000, got {chunk_ms}")
        super().__init__(host=host, port=port, max_size=16 * 1024 * 1024)
        self.scenario = scenario or Scenario()
        self.record = SimRecord(Script(self.scenario))
        self.handshakes: list[Handshake] = []
        self.dialect: SimDialect = dialect
        self._speed = check_speed(speed)
        self._api_key = api_key
        self._chunk_ms = chunk_ms
        self._synth: SynthMode = synth
        self._connections: set[ServerConnection] = set()

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await super().start()
        _log.info(
            "sim_started",
            url=self.url,
            dialect=self.dialect,
            scenario=self.scenario.name,
            note="a protocol simulator, not an AI: it plays back a script",
        )

    @property
    def base_url(self) -> str:
        """``ws://127.0.0.1:PORT/v1`` (the openai SDK's ``websocket_base_url``)."""
        return f"ws://{self._host}:{self.port}/v1"

    @property
    def url(self) -> str:
        """The endpoint of :attr:`dialect` (``ws://127.0.0.1:PORT/v1/realtime`` for OpenAI)."""
        return self.url_for(self.dialect)

    def url_for(self, dialect: SimDialect) -> str:
        """``ws://127.0.0.1:PORT`` + the dialect's path (OpenAI: append ``?model=…``)."""
        return f"ws://{self._host}:{self.port}{PATHS[dialect]}"

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
        dialect = dialect_of(url.path)
        authorized = self._authorized(dialect, request.headers, url.query)
        status = HTTPStatus.SWITCHING_PROTOCOLS
        response: Response | None = None
        if dialect is None:
            status = HTTPStatus.NOT_FOUND
            response = connection.respond(status, f"no realtime endpoint at {url.path}\n")
        elif model is None and dialect == "openai":
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

    def _authorized(self, dialect: SimDialect | None, headers: Headers, query: str) -> bool:
        if self._api_key is None:
            return True
        if dialect == "gemini":
            keys = parse_qs(query).get("key") or [headers.get("x-goog-api-key") or ""]
            return keys[0] == self._api_key
        return headers.get("Authorization") == f"Bearer {self._api_key}"

    async def _handle(self, connection: ServerConnection) -> None:
        self._connections.add(connection)
        self.record.connection_count += 1
        request = connection.request
        url = urlsplit(request.path if request is not None else PATH)
        session = self._session_for(dialect_of(url.path) or "openai", connection, url.query)
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

    def _session_for(
        self, dialect: SimDialect, connection: ServerConnection, query: str
    ) -> SimSession | GeminiSimSession:
        common: dict[str, Any] = {
            "record": self.record,
            "send": connection.send,
            "abort": connection.transport.abort,
            "speed": self._speed,
            "chunk_ms": self._chunk_ms,
            "synth": self._synth,
        }
        model = _model_of(query)
        if dialect == "gemini":
            return GeminiSimSession(close_socket=connection.close, model="", **common)
        common["close_socket"] = connection.close
        if dialect == "xai":
            return XaiSimSession(model=model or "grok-voice-think-fast-1.0", **common)
        return SimSession(model=model or "gpt-realtime", **common)


def _model_of(query: str) -> str | None:
    models = parse_qs(query).get("model")
    return models[0] if models else None
