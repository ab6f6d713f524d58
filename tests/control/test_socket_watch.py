"""A removed control socket (or its folder) comes back, said in the journal.

Before: ``rm -r /run/huxleyd`` left the daemon listening on a socket nobody
could reach, ``huxleyctl`` said "not running", nothing was logged. Real
unix sockets; the watch's interval is injected (10 ms).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.pathwatch import watch_socket_path
from huxleyd.control.server import ControlServer
from tests.fakes.control_client import LineClient
from tests.fakes.control_handler import FakeControlHandler


async def wait_for(predicate: object, what: str) -> None:
    for _ in range(500):
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def remove(path: Path, *, folder: bool) -> None:
    if folder:
        shutil.rmtree(path.parent)
    else:
        path.unlink()


def put_file(path: Path) -> None:
    path.write_text("someone else's")


def read(path: Path) -> str:
    return path.read_text()


@pytest.mark.parametrize("removed", ["the socket file", "its folder"])
async def test_a_removed_socket_is_recreated_and_answers(
    sock_path: Path, removed: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ControlSettings(socket_path=sock_path, socket_group=None)
    async with ControlServer(FakeControlHandler(), settings) as server:
        held = await LineClient.connect(sock_path)  # a client connected before
        watch = asyncio.create_task(watch_socket_path(server, interval_s=0.01))
        with caplog.at_level(logging.INFO):
            remove(sock_path, folder=removed == "its folder")
            await wait_for(sock_path.exists, "the socket is back")
            client = await LineClient.connect(sock_path)
            assert (await client.call(1, "status"))["ok"] is True
            assert (await held.call(2, "status"))["ok"] is True, "the held one goes on"
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
    reason = "its folder was removed" if removed == "its folder" else "the socket file was removed"
    lines = [r.getMessage() for r in caplog.records if "control_socket_recreated" in r.getMessage()]
    assert len(lines) == 1 and reason in lines[0]


async def test_another_file_in_its_place_is_named_once_and_left_alone(
    sock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ControlSettings(socket_path=sock_path, socket_group=None)
    async with ControlServer(FakeControlHandler(), settings) as server:
        remove(sock_path, folder=False)
        put_file(sock_path)
        with caplog.at_level(logging.INFO):
            watch = asyncio.create_task(watch_socket_path(server, interval_s=0.01))
            await asyncio.sleep(0.2)
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        assert read(sock_path) == "someone else's"
    assert caplog.text.count("control_socket_taken") == 1
