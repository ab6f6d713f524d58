"""Tools from MCP servers, against a real MCP server on loopback (both transports).

The server (``tests/home/mcp_server.py``) is built with the ``mcp`` package
and served by uvicorn in its own process, with a bearer token as Home
Assistant asks for one. The daemon's side is the real
:class:`~huxleyd.home.mcp.McpServerLink` attached to the real
:class:`~huxleyd.skillhost.host.SkillHost`, so every call goes through the
host's ledger exactly as the model's would: what is asserted is what the
model is sent (``host.tools``, each call's output) and what the journal and
the degraded record say.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from huxleyd.degraded import Degraded
from huxleyd.home.mcp import McpServerLink, model_tool_name
from huxleyd.home.settings import McpServerSettings
from huxleyd.home.speaker import Home
from huxleyd.skillhost.host import SkillHost
from tests.e2e.harness import until
from tests.home.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-5f1e9a7c-not-for-logs"
PATHS = {"streamable-http": "/api/mcp", "sse": "/mcp_server/sse"}


class Server:
    """The test MCP server as a process; :meth:`stop` and :meth:`start` on one port."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.record = folder / "calls.txt"
        self.record.touch()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.home.mcp_server", str(self.port), TOKEN],
            cwd=ROOT,
            env={"MCP_SERVER_LOG": str(self.record), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        import socket

        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, "the MCP server exited at start"
                assert time.monotonic() < deadline, "the MCP server did not listen"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def url(self, transport: str) -> str:
        return f"http://127.0.0.1:{self.port}{PATHS[transport]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("mcp"))
    s.start()
    yield s
    s.stop()


class Rig:
    def __init__(self, link: McpServerLink, host: SkillHost, degraded: Degraded) -> None:
        self.link, self.host, self.degraded = link, host, degraded
        self.refreshes = 0
        self.changed = asyncio.Event()

    def names(self) -> set[str]:
        return {t.name for t in self.host.tools}

    async def until(self, what: str, check: Callable[[], object], timeout_s: float = 15.0) -> None:
        await until(check, f"{what} ({self.link.state})", timeout_s)

    async def call(self, tool: str, **args: object) -> tuple[str, str | None]:
        outcome = await self.host.call("c1", tool, json.dumps(args))
        return outcome.output, outcome.error


@asynccontextmanager
async def rig(
    url: str, token_file: Path, *, timeout_s: float = 8.0, transport: str = "auto"
) -> AsyncIterator[Rig]:
    degraded = Degraded()
    host = SkillHost([])
    settings = McpServerSettings(
        name="home",
        url=url,
        token_file=token_file,
        timeout_s=timeout_s,
        transport=transport,  # type: ignore[arg-type]
    )
    holder: list[Rig] = []

    def refresh() -> None:
        holder[0].refreshes += 1

    home_ref: list[Home] = []
    link = McpServerLink(
        settings,
        degraded=degraded,
        on_tools_changed=lambda link: home_ref[0].tools_changed(link),
        delays=lambda: iter([0.3] * 1000),
        ping_every_s=0.3,
    )
    home_ref.append(Home(servers=[link], mqtt=None, host=host, refresh_tools=refresh))
    r = Rig(link, host, degraded)
    holder.append(r)
    task = asyncio.get_running_loop().create_task(link.run())
    try:
        yield r
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "home.token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.mark.parametrize("transport", list(PATHS))
async def test_tools_are_listed_and_called_through_the_ledger(
    server: Server, token_file: Path, transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with rig(server.url(transport), token_file) as r:
        await r.until("listed", lambda: "home__light_off" in r.names())
        assert {"home__light_off", "home__fail", "home__slow", "home__grow"} <= r.names()
        assert r.refreshes >= 1  # the session was re-sent with them
        assert r.link.state.startswith(f"connected ({transport})")

        output, error = await r.call("home__light_off", name=f"kitchen-{transport}")
        assert (output, error) == (f"kitchen-{transport} is off", None)
        assert f"light_off kitchen-{transport}" in server.record.read_text().splitlines()

        # The server's failure: a generic error to the model, the detail to the journal.
        output, error = await r.call("home__fail")
        assert error == "tool_failed"
        assert json.loads(output) == {"error": "tool_failed", "exception": "McpToolError"}
        failed = [rec for rec in caplog.records if rec.getMessage().startswith("tool_failed")]
        assert failed and "fail:" in failed[-1].getMessage()

        # Arguments are checked against the server's schema before anything is sent.
        output, error = await r.call("home__light_off")
        assert error == "invalid_arguments" and "name" in output
    assert TOKEN not in caplog.text


async def test_a_call_past_its_deadline_is_answered(server: Server, token_file: Path) -> None:
    async with rig(server.url("streamable-http"), token_file, timeout_s=0.5) as r:
        await r.until("listed", lambda: "home__slow" in r.names())
        started = time.monotonic()
        output, error = await r.call("home__slow", seconds=5)
        assert error == "timeout" and time.monotonic() - started < 2.0
        assert "did not answer within 0.5 s" in output
        # the session is still good for the next call
        output, error = await r.call("home__light_off", name="hall")
        assert (output, error) == ("hall is off", None)


@pytest.mark.parametrize("transport", list(PATHS))
async def test_a_changed_tool_list_is_offered_again(
    tmp_path: Path, token_file: Path, transport: str
) -> None:
    own = Server(tmp_path)  # grow changes the server: a server of its own
    own.start()
    try:
        async with rig(own.url(transport), token_file) as r:
            await r.until("listed", lambda: "home__grow" in r.names())
            assert "home__dim" not in r.names()
            before = r.refreshes
            output, error = await r.call("home__grow")
            assert (output, error) == ("grown", None)
            await r.until("list_changed followed", lambda: "home__dim" in r.names())
            assert r.refreshes > before
            output, error = await r.call("home__dim", name="desk", level=30)
            assert (output, error) == ("desk at 30", None)
    finally:
        own.stop()


async def test_a_server_gone_and_back(tmp_path: Path, token_file: Path) -> None:
    own = Server(tmp_path)
    own.start()
    try:
        async with rig(own.url("streamable-http"), token_file) as r:
            await r.until("listed", lambda: "home__light_off" in r.names())
            own.stop()
            await r.until("withdrawn", lambda: not r.names())
            problem = " ".join(r.degraded.lines())
            assert "mcp:home" in problem and "retried with backoff" in problem
            output, error = await r.call("home__light_off", name="x")
            assert error == "unknown_tool"  # what the model gets once the tools are gone
            own.start()
            await r.until("back", lambda: "home__light_off" in r.names())
            assert not r.degraded.lines()
            output, error = await r.call("home__light_off", name="porch")
            assert (output, error) == ("porch is off", None)
    finally:
        own.stop()


@pytest.mark.parametrize("transport", list(PATHS))
async def test_a_refused_token_is_said_and_never_logged(
    server: Server, tmp_path: Path, transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    wrong = "wrong-9c2d41-also-secret"
    bad = tmp_path / "bad.token"
    bad.write_text(wrong + "\n")
    async with rig(server.url(transport), bad) as r:
        await r.until("refused", lambda: bool(r.degraded.lines()))
        assert not r.names()
        line = r.degraded.lines()[0]
        assert "refused the token (HTTP 401)" in line, line
        assert "refused the token" in r.link.state
        bad.write_text(TOKEN + "\n")  # re-read on the next try: no restart
        await r.until("accepted", lambda: "home__light_off" in r.names())
    assert wrong not in caplog.text and TOKEN not in caplog.text


async def test_a_cancel_the_transport_turns_into_errors_still_ends_the_link(
    token_file: Path,
) -> None:
    """Seen under load (1 run in 15): the daemon's stop cancelled the link while
    the SSE reader was handing the server's answer on; the transport's anyio
    task group raised the reader's BrokenResourceError in a group instead of
    the CancelledError, the link took it for a broken server and reconnected,
    and the stop waited for ever. Here the transport's child fails the same
    way, every time."""

    class Session:
        async def list_tools(self, params: object = None) -> object:
            return SimpleNamespace(tools=[], next_cursor=None)

        async def send_ping(self) -> None:
            pass

    opened = 0

    @asynccontextmanager
    async def transport(token: str | None) -> AsyncIterator[Session]:
        nonlocal opened
        opened += 1

        async def reader() -> None:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                raise anyio.BrokenResourceError from None  # its stream closed under it

        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            yield Session()
            group.cancel_scope.cancel()

    settings = McpServerSettings(name="home", url="http://127.0.0.1:9/sse", token_file=token_file)
    link = McpServerLink(
        settings, degraded=Degraded(), on_tools_changed=lambda link: None, ping_every_s=0.05
    )
    link._open = transport  # type: ignore[method-assign,assignment]
    task = asyncio.get_running_loop().create_task(link.run())
    await until(lambda: link.connected, "connected")
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5.0)
    try:
        assert task in done, f"the link went on after its cancel ({link.state})"
        assert task.cancelled() and opened == 1 and not link.connected
    finally:
        while not task.done():  # a link that swallows cancels ends in its backoff sleep
            task.cancel()
            await asyncio.wait({task}, timeout=0.1)


def test_tool_names_fit_every_provider() -> None:
    assert model_tool_name("home", "HassTurnOff") == "home__HassTurnOff"
    odd = model_tool_name("home", "light.turn off/ü")
    assert odd.startswith("home__light_turn_off") and odd != model_tool_name(
        "home", "light.turn.off/ü"
    )
    long = model_tool_name("home", "x" * 100)
    assert len(long) <= 64
    assert long != model_tool_name("home", "x" * 99)


def test_the_daemon_imports_mcp_only_when_a_server_is_configured(token_file: Path) -> None:
    """The mcp package (pydantic, starlette, httpx) was 1.4 s of a 2.1 s start's
    imports on a PC, for every start. The start path leaves it out; a
    configured ``[[mcp]]`` still gets its link from :func:`open_home`."""
    code = (
        "import sys\n"
        "import huxleyd.app.main\n"
        "print(sorted(m for m in ('mcp', 'pydantic', 'starlette', 'httpx2') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"

    from huxleyd.home.settings import MqttSettings
    from huxleyd.home.speaker import open_home

    class Coordinator:
        def __init__(self) -> None:
            self.subscribed: list[object] = []

        def subscribe(self, listener: object) -> None:
            self.subscribed.append(listener)

    settings = McpServerSettings(
        name="home", url="http://127.0.0.1:9/api/mcp", token_file=token_file
    )
    coordinator = Coordinator()
    home = open_home(
        mcp=[settings],
        mqtt=MqttSettings(),
        coordinator=coordinator,  # type: ignore[arg-type]
        volume=None,  # type: ignore[arg-type]
        host=SkillHost([]),
        degraded=Degraded(),
        provider_online=lambda: True,
        tell_watch=lambda *a, **k: None,
        refresh_tools=lambda: None,
        state_dir=token_file.parent,
        version="test",
        config_file="huxleyd.toml",
    )
    assert home is not None
    assert [type(s) for s in home.servers] == [McpServerLink]
    assert home.servers[0].settings is settings
    assert [name for name, _ in home.tasks()] == ["mcp-home"]
    assert coordinator.subscribed == [home.on_news]
