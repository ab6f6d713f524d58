"""A tiny HTTP/1.1 server on loopback, enough for the ``openai`` client.

Layer: adapter (asyncio streams). It serves the simulator's REST endpoints
(chat completions, transcriptions, the Responses API): POST bodies with a
Content-Length or chunked, JSON or ``multipart/form-data``; JSON answers; and
server-sent events (chunked, then the connection closes). It notices when a
client hangs up in the middle of an event stream — that is how the tests
see a barge-in abort the LLM stream. Not a general web server: no TLS, no
pipelining, one request at a time per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from huxleyd.logs import get_logger

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024

_log = get_logger("huxleyd.sim")


class HttpError(Exception):
    """Answer the request with ``status`` and an OpenAI-style JSON error."""

    def __init__(self, status: int, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": None, "code": self.code}}


class ClientGone(Exception):
    """The client closed the connection while we were still answering."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One part of a ``multipart/form-data`` body."""

    name: str
    value: bytes
    filename: str | None = None
    content_type: str | None = None

    @property
    def text(self) -> str:
        return self.value.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A parsed request. Header names are lower-case."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    body: bytes = field(repr=False)

    def json(self) -> Any:
        """The body as JSON; HttpError 400 when it is not."""
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise HttpError(400, f"the body is not valid JSON: {exc}") from exc

    def form(self) -> dict[str, FormField]:
        """The ``multipart/form-data`` fields by name; HttpError 400 when malformed."""
        content_type = self.headers.get("content-type", "")
        match = re.search(r'boundary="?([^";]+)"?', content_type)
        if not content_type.startswith("multipart/form-data") or match is None:
            raise HttpError(400, f"expected multipart/form-data, got {content_type!r}")
        return _parse_multipart(self.body, match.group(1).encode())


def _parse_multipart(body: bytes, boundary: bytes) -> dict[str, FormField]:
    fields: dict[str, FormField] = {}
    for part in body.split(b"--" + boundary)[1:]:
        if part.startswith(b"--"):
            break  # the closing delimiter
        head, sep, value = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not sep:
            raise HttpError(400, "a multipart part without a blank line after its headers")
        headers = _header_lines(head.decode("latin-1").split("\r\n"))
        disposition = headers.get("content-disposition", "")
        name = re.search(r'\bname="([^"]*)"', disposition)
        if name is None:
            raise HttpError(400, f"a multipart part without a name: {disposition!r}")
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        fields[name.group(1)] = FormField(
            name.group(1),
            value.removesuffix(b"\r\n"),
            filename.group(1) if filename else None,
            headers.get("content-type"),
        )
    return fields


def _header_lines(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise HttpError(400, f"malformed header line {line!r}")
        headers[name.strip().lower()] = value.strip()
    return headers


class Exchange:
    """How a handler answers one request: once with JSON, or as an event stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._watcher: asyncio.Task[None] | None = None
        self.client_gone = asyncio.Event()
        """Set when the client hung up during an event stream."""
        self.answered = False
        self.close_connection = False

    async def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        await self._send_head(status, "application/json", {"Content-Length": str(len(data))})
        await self._write(data)

    async def send_text(self, status: int, text: str) -> None:
        data = text.encode()
        await self._send_head(
            status, "text/plain; charset=utf-8", {"Content-Length": str(len(data))}
        )
        await self._write(data)

    async def start_events(self) -> None:
        """Begin a ``text/event-stream`` answer (the connection closes after it)."""
        self.close_connection = True
        await self._send_head(
            200,
            "text/event-stream",
            {"Transfer-Encoding": "chunked", "Cache-Control": "no-cache", "Connection": "close"},
        )
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def send_event(self, data: str) -> None:
        """One ``data:`` event. Raises :class:`ClientGone` if the client left."""
        if self.client_gone.is_set():
            raise ClientGone()
        payload = f"data: {data}\n\n".encode()
        await self._write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

    async def end_events(self) -> None:
        await self._write(b"0\r\n\r\n")
        await self._stop_watching()

    async def _watch(self) -> None:
        # The client sends nothing more on this connection; EOF means it hung up.
        with contextlib.suppress(ConnectionError):
            while await self._reader.read(4096):
                pass
        self.client_gone.set()

    async def _stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None

    async def _send_head(self, status: int, content_type: str, extra: dict[str, str]) -> None:
        if self.answered:
            raise RuntimeError("this request was already answered")
        self.answered = True
        reason = HTTPStatus(status).phrase
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        if self.close_connection and "Connection" not in extra:
            lines.append("Connection: close")
        await self._write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    async def _write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            self.client_gone.set()
            raise ClientGone() from exc


Handler = Callable[[HttpRequest, Exchange], Awaitable[None]]


class HttpServer:
    """Serve ``routes`` (``(method, path) → handler``) on ``host:port`` (0: any free port)."""

    def __init__(
        self, routes: Mapping[tuple[str, str], Handler], *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._routes = dict(routes)
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self._host, self._port, limit=MAX_HEADER_BYTES
        )

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the HTTP server is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (the openai client's ``base_url``)."""
        return f"http://{self._host}:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # asyncio logs an error when the task it made for this callback is
        # cancelled, so close() cancels an inner task instead.
        task = asyncio.get_running_loop().create_task(self._connection(reader, writer))
        self._handlers.add(task)
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ClientGone):
            while await self._one(reader, writer):
                pass

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection should close."""
        exchange = Exchange(reader, writer)
        try:
            request = await _read_request(reader)
            if request is None:
                return False
            handler = self._routes.get((request.method, request.path))
            if handler is None:
                raise HttpError(404, f"no route for {request.method} {request.path}")
            await handler(request, exchange)
            if not exchange.answered:
                raise RuntimeError(f"the handler of {request.path} did not answer")
        except HttpError as exc:
            if exchange.answered:
                raise
            exchange.close_connection = exc.status == 400
            await exchange.send_json(exc.status, exc.body())
        except ClientGone:
            return False
        except Exception as exc:  # a bug in a handler: answer 500, keep serving
            _log.exception("sim_http_handler_failed", error=repr(exc))
            if not exchange.answered:
                await exchange.send_json(500, HttpError(500, repr(exc)).body())
            return False
        finally:
            await exchange._stop_watching()
        return not exchange.close_connection


async def _read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise HttpError(400, "the request ended inside its headers") from exc
        return None
    except asyncio.LimitOverrunError as exc:
        raise HttpError(431, "request headers too large") from exc
    request_line, *lines = head.decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"malformed request line {request_line!r}")
    headers = _header_lines(lines)
    body = await _read_body(reader, headers)
    url = urlsplit(parts[1])
    return HttpRequest(parts[0], url.path, parse_qs(url.query), headers, body)


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        total = 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                raise HttpError(413, "request body too large")
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length", "0") or "0")
    if length > MAX_BODY_BYTES:
        raise HttpError(413, "request body too large")
    return await reader.readexactly(length) if length else b""
