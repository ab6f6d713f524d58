"""A raw line client of the control socket (what huxleyctl sends, without the CLI):
the server tests and the control-flood faults speak the protocol through it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any


class LineClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, path: Path) -> LineClient:
        reader, writer = await asyncio.open_unix_connection(path, limit=1 << 20)
        return cls(reader, writer)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, obj: dict[str, Any]) -> None:
        await self.send_raw(json.dumps(obj).encode() + b"\n")

    async def recv(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), timeout=10)
        assert line.endswith(b"\n"), f"connection closed (got {line!r})"
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def call(self, rid: int, cmd: str, **args: Any) -> dict[str, Any]:
        await self.send({"id": rid, "cmd": cmd, "args": args})
        return await self.recv()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()
