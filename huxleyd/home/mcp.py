"""Tools from MCP servers (``[[mcp]]``): Home Assistant's MCP Server, or any other.

Layer: adapter (the network, through the ``mcp`` package's client). One
:class:`McpServerLink` per server keeps a session open, with the bearer
token read from ``token_file`` at every try (never logged), and lends the
server's tools to the :class:`~huxleyd.skillhost.host.SkillHost` as an
*attached source* (:meth:`~huxleyd.skillhost.host.SkillHost.attach`). So an
MCP tool is called exactly as a skill's is: checked arguments, a deadline
(``timeout_s``), every call answered, a generic error to the model and the
server's own words to the journal.

- Names: the model sees ``<name>__<tool>`` (``home__HassTurnOff``), of the
  characters and length every provider allows (:func:`model_tool_name`), so
  a server's tool cannot take a skill's name.
- Listing: at connect, and again on ``notifications/tools/list_changed``.
- Transport: streamable HTTP, or SSE when the URL path ends in ``/sse``
  (Home Assistant's ``/mcp_server/sse``) or ``transport = "sse"``.
- Down, or refusing the token: its tools are withdrawn (the session is
  re-sent without them), the degraded record says why (``mcp:<name>``:
  status, doctor, journal), and it is tried again on the backoff of
  conventions rule 7. A session that was up is checked with a ping every
  :data:`PING_EVERY_S` (streamable HTTP notices a dead server only when it
  next asks).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from huxley_sdk import ToolDefinition, ToolResult
from huxleyd.degraded import Degraded
from huxleyd.home.settings import McpServerSettings
from huxleyd.logs import get_logger
from huxleyd.providers.retry import backoff_delays, being_cancelled

log = get_logger("huxleyd.home")

PING_EVERY_S = 30.0
"""How often an idle session is checked (a ping) so a dead server is noticed."""

MAX_TOOL_NAME = 64
"""The longest function name OpenAI, Gemini and xAI all accept."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


class McpToolError(Exception):
    """The server answered a tool call with an error (its text goes to the journal only)."""


class McpUnavailable(Exception):
    """No session with the server right now (the call is answered with a generic error)."""


def model_tool_name(server: str, tool: str) -> str:
    """``<server>__<tool>`` in the characters and length every provider accepts.

    A name that had to be changed (other characters, too long) gets a short
    hash of the original, so two tools cannot end up with one name."""
    wanted = f"{server}__{tool}"
    name = _NOT_ALLOWED.sub("_", wanted)
    if name == wanted and len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha1(tool.encode()).hexdigest()[:6]
    return f"{name[: MAX_TOOL_NAME - 7]}_{digest}"


def read_token(path: Path | None) -> str | None:
    """The bearer token (the file's first line), or None when no file is named."""
    if path is None:
        return None
    text = path.read_text(encoding="utf-8").strip()
    if not text:
        raise ValueError(f"{path} is empty")
    return text.splitlines()[0].strip()


def http_status(exc: BaseException) -> int | None:
    """The HTTP status inside ``exc`` (an exception group's members included), if any."""
    for one in _leaves(exc):
        response = getattr(one, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
        if exc.__cause__ is not None:
            yield from _leaves(exc.__cause__)


def describe_failure(exc: BaseException, token: str | None, *, status: int | None = None) -> str:
    """One line for status and the journal: why the server is not usable (no token in it).

    ``status``: the last HTTP status the server answered, when the exception lost it."""
    status = http_status(exc) or (status if status is not None and status >= 400 else None)
    if status in (401, 403):
        return f"the server refused the token (HTTP {status}): check token_file"
    if status is not None:
        return f"the server answered HTTP {status}"
    leaf = next(_leaves(exc))
    text = " ".join(str(leaf).split()) or type(leaf).__name__
    if token:
        text = text.replace(token, "***")
    return f"cannot connect: {type(leaf).__name__}: {text}"[:300]


def result_text(result: mcp_types.CallToolResult) -> str:
    """What a tool answered, as text for the model (text parts joined; else the structure)."""
    texts = [c.text for c in result.content if isinstance(c, mcp_types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        import json

        return json.dumps(result.structured_content)
    return ""


class McpServerLink:
    """One ``[[mcp]]`` server, lent to the skill host as an attached tool source.

    ``on_tools_changed`` is called (on the loop) whenever the tools offered
    changed: the runtime then re-sends the session's tools to the provider."""

    def __init__(
        self,
        settings: McpServerSettings,
        *,
        degraded: Degraded,
        on_tools_changed: Callable[[McpServerLink], None],
        delays: Callable[[], Iterable[float]] = backoff_delays,
        ping_every_s: float = PING_EVERY_S,
        config_file: str = "",
    ) -> None:
        self.settings = settings
        self.name = f"mcp:{settings.name}"
        """The source name in the skill host (never a skill's: skills have no colon)."""
        self.tools: list[ToolDefinition] = []
        self._names: dict[str, str] = {}
        """Model tool name → the server's tool name."""
        self._degraded = degraded
        self._on_tools_changed = on_tools_changed
        self._delays = delays
        self._ping_every_s = ping_every_s
        self._config_file = config_file
        self._session: ClientSession | None = None
        self._relist = asyncio.Event()
        self._broken: BaseException | None = None
        self._wake = asyncio.Event()
        self._last_status: int | None = None
        self.state = "connecting"
        """One line for status: ``connected, 3 tools`` or why not."""

    @property
    def tool_timeouts_s(self) -> dict[str, float]:
        return dict.fromkeys(self._names, self.settings.timeout_s)

    @property
    def connected(self) -> bool:
        return self._session is not None

    # ------------------------------------------------------------ calls (the skill host)

    async def handle(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Call ``tool`` on the server; raises on any failure (the host answers the model)."""
        session, original = self._session, self._names.get(tool)
        if session is None or original is None:
            raise McpUnavailable(f"{self.settings.name} is not connected")
        result = await session.call_tool(original, args)
        text = result_text(result)
        if result.is_error:
            raise McpToolError(f"{original}: {text}")
        return ToolResult(output=text)

    # ------------------------------------------------------------ the session

    async def run(self) -> None:
        """Connect, list, follow changes; on any failure withdraw the tools and retry.

        Runs for the daemon's life (a supervised runtime task); never raises but
        CancelledError."""
        delays = iter(self._delays())
        attempt = 0
        while True:
            token: str | None = None
            try:
                token = read_token(self.settings.token_file)
                async with self._open(token) as session:
                    await self._serve(session)
            except asyncio.CancelledError:
                self._withdraw()
                raise
            except Exception as exc:
                was_up = self._session is not None
                self._withdraw()
                if being_cancelled():  # the cancel, raised as the transport's errors
                    raise asyncio.CancelledError from exc
                attempt += 1
                why = (
                    f"token_file {self.settings.token_file}: {exc}"
                    if token is None and self.settings.token_file is not None
                    else describe_failure(exc, token, status=self._last_status)
                )
                self.state = f"down: {why}"
                delay_s = next(delays)
                self._degraded.report(
                    self.name,
                    f"{self.settings.url}: {why}; its tools are left out, retried with backoff",
                    file=self._config_file or None,
                )
                log.warning(
                    "mcp_server_down",
                    server=self.settings.name,
                    url=self.settings.url,
                    reason=why,
                    attempt=attempt,
                    next_try_in_s=round(delay_s, 1),
                    was_up=was_up,
                )
                await asyncio.sleep(delay_s)
                continue
            delays = iter(self._delays())  # it ended cleanly (list_changed loop left): reset

    def _http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """The transports' HTTP client, noting each answer's status: the
        streamable transport turns a 401 into a generic JSON-RPC error, so
        the refusal is read here."""
        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)

        async def note(response: httpx2.Response) -> None:
            self._last_status = response.status_code

        client.event_hooks["response"].append(note)
        return client

    @contextlib.asynccontextmanager
    async def _open(self, token: str | None) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        timeout_s = self.settings.timeout_s
        self._last_status = None
        transport: contextlib.AbstractAsyncContextManager[Any]
        if self.settings.resolved_transport == "sse":
            transport = sse_client(
                self.settings.url,
                headers=headers,
                timeout=timeout_s,
                httpx_client_factory=self._http_client,
            )
        else:
            client = self._http_client(headers, httpx2.Timeout(timeout_s, read=300.0))
            transport = streamable_http_client(self.settings.url, http_client=client)
        async with contextlib.AsyncExitStack() as stack:
            if self.settings.resolved_transport != "sse":
                await stack.enter_async_context(client)
            read, write = await stack.enter_async_context(transport)
            session = await stack.enter_async_context(
                ClientSession(read, write, message_handler=self._on_message)
            )
            with anyio.fail_after(timeout_s):
                await session.initialize()
            yield session

    async def _serve(self, session: ClientSession) -> None:
        await self._list(session)
        self._session = session
        self._degraded.clear(self.name)
        log.info(
            "mcp_server_connected",
            server=self.settings.name,
            url=self.settings.url,
            transport=self.settings.resolved_transport,
            tools=",".join(self._names.values()),
        )
        while True:
            self._wake.clear()
            # anyio's timeouts, not asyncio.wait_for: inside the session's anyio task
            # groups a cancelled wait_for can wait forever for its inner task.
            with anyio.move_on_after(self._ping_every_s):
                await self._wake.wait()
            if self._broken is not None:
                broken, self._broken = self._broken, None
                raise ConnectionError(f"the session broke: {broken}") from broken
            if self._relist.is_set():
                self._relist.clear()
                await self._list(session)
                log.info(
                    "mcp_tools_changed",
                    server=self.settings.name,
                    tools=",".join(self._names.values()),
                )
            else:
                with anyio.fail_after(self.settings.timeout_s):
                    await session.send_ping()

    async def _list(self, session: ClientSession) -> None:
        listed: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            with anyio.fail_after(self.settings.timeout_s):
                page = await session.list_tools(params=params)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        names: dict[str, str] = {}
        tools: list[ToolDefinition] = []
        for tool in listed:
            name = model_tool_name(self.settings.name, tool.name)
            if name in names:
                continue
            names[name] = tool.name
            schema = dict(tool.input_schema or {})
            schema.setdefault("type", "object")
            schema.setdefault("properties", {})
            tools.append(ToolDefinition(name, tool.description or tool.title or tool.name, schema))
        changed = names != self._names or tools != self.tools
        self._names, self.tools = names, tools
        self.state = f"connected ({self.settings.resolved_transport}), {len(tools)} tools"
        if changed or self._session is None:
            self._on_tools_changed(self)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            self._broken = message
            self._wake.set()
        elif isinstance(message, mcp_types.ToolListChangedNotification):
            self._relist.set()
            self._wake.set()

    def _withdraw(self) -> None:
        had = bool(self.tools) or self._session is not None
        self._session = None
        self._names, self.tools = {}, []
        self._relist.clear()
        self._broken = None
        if had:
            self._on_tools_changed(self)
