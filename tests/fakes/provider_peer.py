"""A fault-injecting OpenAI Realtime peer on loopback, for the fault suite.

Not the simulator (:mod:`huxleyd.sim`), which plays a script faithfully: this
peer misbehaves on purpose, one connection at a time, as its plan says. It
is built on websockets' sans-I/O ``ServerProtocol`` over a plain asyncio
server, so it can do what a well-behaved server library never would:
refuse the handshake with any status, drop a ready session without a close
frame, or never answer the client's close.

Each accepted connection gets the next :class:`Fault` of the plan (the last
one repeats). What it saw is kept for the test: the handshakes (status and
the key offered) and every client event by type.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

from websockets.frames import Close, Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol


@dataclass(frozen=True, slots=True)
class Fault:
    """How one connection misbehaves (the defaults: a healthy session)."""

    status: int | None = None
    """Refuse the handshake with this HTTP status (401, 503…)."""
    drop_after_ready: bool = False
    """Abort the socket (no close frame) right after the session is ready."""
    ignore_close: bool = False
    """Never answer the client's close frame (and never close ourselves)."""
    stall_handshake: bool = False
    """Read the client's handshake request and never answer it (a peer that
    accepted the TCP connection and hung: only the client's open timeout ends it)."""
    trickle_s: float | None = None
    """Answer ``response.create`` with a frame sent one byte every ``trickle_s``
    seconds (a link that crawls: the socket stays open, no frame completes),
    and send nothing else on that connection from then on."""


@dataclass(frozen=True, slots=True)
class SeenHandshake:
    status: int
    authorization: str | None


class FaultPeer:
    """``async with FaultPeer([Fault(...), ...]) as peer: ... peer.url``."""

    def __init__(self, plan: list[Fault] | None = None) -> None:
        self._plan = plan or [Fault()]
        self.handshakes: list[SeenHandshake] = []
        self.events: list[str] = []
        """Client event types, in order, over all connections."""
        self.sessions_ready = 0
        self.closes: list[tuple[int, str]] = []
        """The close frames the client sent: ``(code, reason)``, in order."""
        self.stalled = 0
        """Handshakes read and left unanswered (``stall_handshake``)."""
        self.trickled_bytes = 0
        """Bytes of trickled frames sent so far (``trickle_s``)."""
        self._server: asyncio.Server | None = None
        self._changed = asyncio.Event()
        self._handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> FaultPeer:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}/v1/realtime"

    async def wait_until(self, predicate: Any, timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def _seen(self) -> None:
        self._changed.set()

    # ------------------------------------------------------------ one connection

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            writer.transport.abort()
            self._seen()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        fault = self._plan[min(len(self.handshakes), len(self._plan) - 1)]
        proto = ServerProtocol(max_size=None)
        request = await self._read_request(proto, reader)
        if request is None:
            return
        if fault.stall_handshake:
            self.stalled += 1
            self._seen()
            await reader.read()  # until the client gives up and closes
            return
        authorization = request.headers.get("Authorization")
        if fault.status is not None:
            response = proto.reject(fault.status, "refused by the fault peer\n")
            proto.send_response(response)
            self.handshakes.append(SeenHandshake(fault.status, authorization))
            await self._flush(proto, writer)
            return
        proto.send_response(proto.accept(request))
        self.handshakes.append(SeenHandshake(101, authorization))
        self._send(proto, {"type": "session.created", "session": {"id": "sess_fault"}})
        await self._flush(proto, writer)
        ready = False
        trickling: asyncio.Task[None] | None = None
        first_event = len(self.events)
        while True:
            data = await reader.read(65536)
            if not data:
                return
            proto.receive_data(data)
            for frame in proto.events_received():
                if not isinstance(frame, Frame):
                    continue
                if frame.opcode is Opcode.CLOSE:
                    close = Close.parse(bytes(frame.data))
                    self.closes.append((close.code, close.reason))
                    self._seen()
                    if fault.ignore_close:
                        proto.data_to_send()  # the close reply is never sent
                        continue
                    await self._flush(proto, writer)
                    return
                if frame.opcode is Opcode.TEXT:
                    ready = self._on_event(proto, json.loads(bytes(frame.data))) or ready
            if (
                fault.trickle_s is not None
                and trickling is None
                and "response.create" in self.events[first_event:]
            ):
                await self._flush(proto, writer)  # what came before is sent whole
                trickling = asyncio.create_task(self._trickle(proto, writer, fault.trickle_s))
                self._handlers.add(trickling)
            if trickling is not None:
                proto.data_to_send()  # nothing else gets through the crawl
                continue
            if fault.ignore_close:
                proto.data_to_send()
                continue
            await self._flush(proto, writer)
            if fault.drop_after_ready and ready:
                writer.transport.abort()
                return

    def _on_event(self, proto: ServerProtocol, event: dict[str, Any]) -> bool:
        """Answer one client event; True when it made the session ready."""
        kind = str(event.get("type"))
        self.events.append(kind)
        self._seen()
        if kind == "session.update":
            self._send(proto, {"type": "session.updated", "session": {"id": "sess_fault"}})
            self.sessions_ready += 1
            return True
        return False

    async def _trickle(
        self, proto: ServerProtocol, writer: asyncio.StreamWriter, every_s: float
    ) -> None:
        """Send a ``response.created`` frame one byte at a time (never completes in a test)."""
        self._send(proto, {"type": "response.created", "response": {"id": "resp_slow"}})
        data = b"".join(proto.data_to_send())
        for byte in data:
            writer.write(bytes([byte]))
            self.trickled_bytes += 1
            self._seen()
            await asyncio.sleep(every_s)

    @staticmethod
    def _send(proto: ServerProtocol, event: dict[str, Any]) -> None:
        proto.send_text(json.dumps(event).encode())

    @staticmethod
    async def _read_request(proto: ServerProtocol, reader: asyncio.StreamReader) -> Request | None:
        while True:
            data = await reader.read(65536)
            if not data:
                return None
            proto.receive_data(data)
            for event in proto.events_received():
                if isinstance(event, Request):
                    return event

    @staticmethod
    async def _flush(proto: ServerProtocol, writer: asyncio.StreamWriter) -> None:
        for chunk in proto.data_to_send():
            if chunk:
                writer.write(chunk)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
