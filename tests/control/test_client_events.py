"""``huxleyctl event KEY JSON``: the door through which Huxley client events
reach skills on this device (docs/skills.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.errors import ControlProtocolError
from huxleyd.control.protocol import Command, EventArgs, parse_request
from huxleyd.control.server import ControlServer
from tests.fakes.control_handler import FakeControlHandler

from .threaded import huxleyctl, serve_in_thread


@pytest.fixture
def fake() -> FakeControlHandler:
    return FakeControlHandler(sample_interval_s=0.02)


@pytest.fixture
def daemon(fake: FakeControlHandler, sock_path: Path) -> Iterator[ControlServer]:
    with serve_in_thread(fake, ControlSettings(socket_path=sock_path, socket_group=None)) as srv:
        yield srv


def test_event_args_parse() -> None:
    line = '{"id": 1, "cmd": "event", "args": {"key": "station", "data": {"name": "jazz"}}}'
    request = parse_request(line)
    assert request.cmd is Command.EVENT
    assert request.args == EventArgs("station", {"name": "jazz"})
    assert parse_request('{"id": 2, "cmd": "event", "args": {"key": "x"}}').args == EventArgs("x")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("{}", "bad args for event: 'key' expected an event name (1-100 characters), got nothing"),
        (
            '{"key": "x", "data": [1]}',
            "bad args for event: 'data' expected an object, got an array",
        ),
    ],
)
def test_event_args_are_checked(args: str, message: str) -> None:
    with pytest.raises(ControlProtocolError) as info:
        parse_request(f'{{"id": 3, "cmd": "event", "args": {args}}}')
    assert str(info.value) == message


def test_huxleyctl_event_reaches_the_subscribers(
    daemon: ControlServer, fake: FakeControlHandler
) -> None:
    done = huxleyctl("event", "station", '{"name": "jazz"}', socket_path=daemon.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "delivered to radio"
    nobody = huxleyctl("event", "doorbell", socket_path=daemon.path)
    assert nobody.returncode == 1
    assert nobody.stdout.strip() == "no skill handled 'doorbell'"
    assert fake.called("client_event") == ["station", "doorbell"]


def test_huxleyctl_event_wants_a_json_object() -> None:
    done = huxleyctl("event", "station", "[1, 2]")
    assert done.returncode == 2
    assert "expected a JSON object" in done.stderr
