"""The host tells systemd when it has started (``READY=1``), and only then does
the unit's watchdog run: ``huxleyd-skillhost@.service`` is ``Type=notify``.

Under emulation the host's imports outlasted ``WatchdogSec=5`` of a unit that
armed the watchdog at the exec (``Type=simple``): systemd killed a host that was
still starting, and the image test's skill was "listed by nothing". These
tests read the datagrams a real ``NOTIFY_SOCKET`` receives.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from huxleyd.skillhost.hostpath.huxley_skillhost import child, link
from tests.fakes.notify import NotifyListener, path_listener
from tests.skillhost.test_host_entry import run_main


@pytest.fixture
def listener() -> Iterator[NotifyListener]:
    with path_listener() as bound:
        yield bound


def test_the_inventory_says_ready_once_the_skills_are_imported(
    monkeypatch: pytest.MonkeyPatch, listener: NotifyListener
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", listener.env_value)
    said_before: list[list[str]] = []

    def inventory() -> dict[str, Any]:  # the skills' modules import here
        said_before.append(listener.drain())
        return {}

    monkeypatch.setattr(child, "inventory", inventory)
    assert run_main(monkeypatch, "--inventory") == 0
    assert said_before == [[]]  # not ready while importing
    assert listener.receive() == "READY=1"


def test_served_it_says_ready_then_pings_and_keeps_pinging_while_a_skill_loads(
    monkeypatch: pytest.MonkeyPatch, listener: NotifyListener
) -> None:
    """READY=1 first; then WATCHDOG=1 at half of WATCHDOG_USEC, also while a
    skill's module imports for longer than the watchdog's limit (a thread)."""
    monkeypatch.setenv("NOTIFY_SOCKET", listener.env_value)
    monkeypatch.setenv("WATCHDOG_USEC", "200000")  # a ping every 0.1 s
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))

    def slow_import(name: str, distribution: str) -> tuple[str, Any]:
        time.sleep(0.6)  # blocks as an import does: three watchdog limits
        raise ValueError(f"no skill {name!r}")

    monkeypatch.setattr(child, "import_skill", slow_import)
    ours, theirs = socket.socketpair()

    async def daemon() -> link.Message:
        reader, writer = await asyncio.open_unix_connection(sock=theirs)
        writer.write(link.encode(link.Load(1, "slow", "slow-dist")))
        await writer.drain()
        done = await link.read(reader, link.TO_DAEMON)
        writer.close()
        return done

    async def both() -> link.Message:
        host = asyncio.ensure_future(child.serve(ours))
        done = await daemon()
        await asyncio.wait_for(host, 5)
        return done

    done = asyncio.run(both())
    assert isinstance(done, link.Done) and "no skill 'slow'" in str(done.error)
    said = [listener.receive()]
    said += listener.drain()
    assert said[0] == "READY=1"
    assert said.count("WATCHDOG=1") >= 5  # 0.6 s of loading, pinged every 0.1 s
