"""sd_notify without systemd-python: the datagrams a real NOTIFY_SOCKET receives."""

from __future__ import annotations

import pytest

from huxleyd.app import systemd as service
from huxleyd.app.systemd import Notifier, watchdog_interval_s
from tests.fakes.notify import NotifyListener


def test_ready_status_stopping_watchdog(notify_socket: NotifyListener) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": notify_socket.env_value})
    assert notifier.status("opening audio devices")
    assert notify_socket.receive() == "STATUS=opening audio devices"
    assert notifier.ready("listening for the button")
    assert notify_socket.receive() == "READY=1\nSTATUS=listening for the button"
    assert notifier.watchdog()
    assert notify_socket.receive() == "WATCHDOG=1"
    assert notifier.stopping()
    assert notify_socket.receive() == "STOPPING=1"
    assert notifier.extend_timeout(2.5)
    assert notify_socket.receive() == "EXTEND_TIMEOUT_USEC=2500000"


def test_abstract_namespace_socket(abstract_notify_socket: NotifyListener) -> None:
    assert abstract_notify_socket.env_value.startswith("@")
    notifier = Notifier({"NOTIFY_SOCKET": abstract_notify_socket.env_value})
    assert notifier.ready()
    assert abstract_notify_socket.receive() == "READY=1"


def test_a_newline_cannot_inject_an_assignment(notify_socket: NotifyListener) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": notify_socket.env_value})
    notifier.status("provider down\nREADY=1")
    assert notify_socket.receive() == "STATUS=provider down READY=1"


def test_module_functions_follow_the_environment(
    notify_socket: NotifyListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", notify_socket.env_value)
    assert service.notify_status("connecting to the provider")
    assert service.notify_ready()
    assert service.notify_watchdog()
    assert service.notify_stopping("saving bookmarks")
    got = [notify_socket.receive() for _ in range(4)]
    assert got == [
        "STATUS=connecting to the provider",
        "READY=1",
        "WATCHDOG=1",
        "STOPPING=1\nSTATUS=saving bookmarks",
    ]


def test_no_op_without_notify_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert not service.notify_ready()
    assert not service.notify_status("x")
    assert not service.notify_stopping()
    assert not service.notify_watchdog()
    assert not Notifier({}).enabled
    assert not Notifier({"NOTIFY_SOCKET": "vsock:2:1234"}).enabled


def test_a_vanished_socket_is_reported_not_raised(notify_socket: NotifyListener) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": notify_socket.env_value + ".gone"})
    assert notifier.enabled
    assert not notifier.ready()
    assert not notifier.watchdog()


def test_watchdog_interval_is_half_of_watchdog_usec() -> None:
    assert watchdog_interval_s({"WATCHDOG_USEC": "30000000"}) == 15.0
    assert watchdog_interval_s({}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "0"}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "soon"}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}) is None
