"""The blocking client (what huxleyctl uses) against a threaded server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.client import ControlClient
from huxleyd.control.errors import (
    CommandFailedError,
    ControlProtocolError,
    DaemonUnreachableError,
)
from huxleyd.control.handler import LevelsSample, SkillInfo
from huxleyd.control.protocol import PttAction
from huxleyd.control.server import ControlServer
from tests.fakes.control_handler import FakeControlHandler

from .threaded import serve_in_thread


@pytest.fixture
def fake() -> FakeControlHandler:
    return FakeControlHandler()


@pytest.fixture
def daemon(fake: FakeControlHandler, sock_path: Path) -> Iterator[ControlServer]:
    settings = ControlSettings(socket_path=sock_path, socket_group=None, request_timeout_s=5)
    with serve_in_thread(fake, settings) as server:
        yield server


def test_typed_commands_on_one_connection(daemon: ControlServer, fake: FakeControlHandler) -> None:
    with ControlClient(daemon.path) as client:
        assert client.status().persona == "default"
        assert client.set_volume(12) == 12
        assert client.get_volume() == 12
        assert client.say("hello") == "turn-1"
        assert client.stop() is True
        assert client.skills()[0] == SkillInfo(
            "system", ("get_current_time", "set_volume"), "huxleyd", "0.1.0"
        )
        client.ptt(PttAction.PRESS)
        assert [c.name for c in client.doctor()] == ["config", "provider"]
        # A finished stream leaves the connection usable.
        assert list(client.levels(count=2)) == [
            LevelsSample(-20.0, -6.0),
            LevelsSample(-120.0, -12.5),
        ]
        assert client.get_volume() == 12
    assert fake.called("ptt") == [PttAction.PRESS]


def test_failed_command_raises_with_the_daemon_message(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    fake.fail["stop"] = CommandFailedError("nothing to stop: media player not running")
    with ControlClient(daemon.path) as client:
        with pytest.raises(CommandFailedError, match="media player not running"):
            client.stop()
        assert client.get_volume() == 55


def test_no_answer_in_time(daemon: ControlServer, fake: FakeControlHandler) -> None:
    fake.hang.add("status")
    with (
        ControlClient(daemon.path, timeout_s=0.2) as client,
        pytest.raises(DaemonUnreachableError, match=r"no answer from huxleyd within 0\.2 s"),
    ):
        client.status()


def test_levels_for_a_duration_closes_the_stream(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    client = ControlClient(daemon.path)
    samples = list(client.levels(duration_s=0.05))
    assert samples  # the fake yields as fast as we read
    deadline = time.monotonic() + 10
    while fake.levels_closed < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.levels_closed == 1  # cutting the stream stopped the daemon's side
    assert client.get_volume() == 55  # and the next command reconnects
    client.close()


def _one_shot_server(path: Path, reply: bytes) -> threading.Thread:
    """A raw server that answers one request with ``reply`` and hangs up."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            conn.makefile("rb").readline()
            conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("reply", "error", "fragment"),
    [
        (b"", DaemonUnreachableError, "huxleyd closed the connection"),
        (b"garbage\n", ControlProtocolError, "reply is not JSON"),
        (b'{"id": 7, "ok": true, "result": {}}\n', ControlProtocolError, "reply for request 7"),
        (b'{"id": 1, "ok": true, "result": {"volume": "x"}}\n', ControlProtocolError, "'volume'"),
        (b'{"id": null, "ok": false, "error": "too many"}\n', CommandFailedError, "too many"),
    ],
)
def test_bad_daemon_replies(
    tmp_path: Path, reply: bytes, error: type[Exception], fragment: str
) -> None:
    path = tmp_path / "s"
    thread = _one_shot_server(path, reply)
    with ControlClient(path, timeout_s=5) as client, pytest.raises(error, match=fragment):
        client.get_volume()
    thread.join(timeout=5)
