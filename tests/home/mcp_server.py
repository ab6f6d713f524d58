"""A real MCP server for the tests, built with the ``mcp`` package (its FastMCP, now
``MCPServer``), served on loopback by uvicorn in this process.

``python -m tests.home.mcp_server PORT TOKEN`` serves both transports:
streamable HTTP at ``/api/mcp`` (as Home Assistant does) and SSE at
``/mcp_server/sse``. Every request needs ``Authorization: Bearer TOKEN``
(else 401, as Home Assistant answers). Its tools: ``light_off`` (records
which light, in the file named by $MCP_SERVER_LOG), ``fail`` (answers an
error), ``slow`` (sleeps), and ``grow``, which adds the tool ``dim`` and
tells the caller's session its tools changed (``notifications/tools/list_changed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send


def make_app(token: str, record: Path | None) -> Starlette:
    server = MCPServer("test-home")

    def note(line: str) -> None:
        if record is not None:
            with record.open("a") as fh:
                fh.write(line + "\n")

    @server.tool(description="Turn a light off.")
    def light_off(name: str) -> str:
        note(f"light_off {name}")
        return f"{name} is off"

    @server.tool(description="Always fails.")
    def fail() -> str:
        raise ValueError("the secret detail of the failure")

    @server.tool(description="Takes its time.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    def dim(name: str, level: int) -> str:
        note(f"dim {name} {level}")
        return f"{name} at {level}"

    @server.tool(description="Adds the tool dim.")
    async def grow(ctx: Context) -> str:
        server.add_tool(dim, name="dim", description="Dim a light.")
        await ctx.session.send_tool_list_changed()
        return "grown"

    http = server.streamable_http_app(streamable_http_path="/api/mcp")
    sse = server.sse_app(sse_path="/sse", message_path="/messages/")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with http.router.lifespan_context(app):
            yield

    app = Starlette(routes=[Mount("/mcp_server", app=sse), Mount("/", app=http)], lifespan=lifespan)
    return _Bearer(app, token)  # type: ignore[return-value]


class _Bearer:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                await PlainTextResponse("401: Unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def main() -> None:
    port, token = int(sys.argv[1]), sys.argv[2]
    record = os.environ.get("MCP_SERVER_LOG")
    app = make_app(token, Path(record) if record else None)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
