"""The soak: a daemon process under steady use, with its resources watched.

Not run by default (``-m soak``; ``HUXLEY_SOAK_S`` sets the length, 1800 s
by default). Text turns go through the control socket one after another,
against the simulator; a fresh control connection is opened now and then
and an idle one is left to the server. RSS, open fds and threads are read
from ``/proc`` after the first turn and at the end, printed, and must not
grow without bound.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.e2e.process import DaemonProcess, write_daemon_config
from tests.fakes.control_client import LineClient

SCENARIO = (
    'name = "soak"\ndefault_reply = "Fine, thank you."\n'
    '[[turns]]\nhear = "what time is it"\n[[turns.responses]]\nsay = "Let me check."\n'
    'tool_calls = [{ name = "get_current_time" }]\n[[turns.responses]]\nsay = "It is late."\n'
)


def resources(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(fields["Threads"]),
    }


@pytest.mark.soak
def test_soak(tmp_path: Path) -> None:
    duration_s = float(os.environ.get("HUXLEY_SOAK_S", "1800"))
    config = write_daemon_config(tmp_path, scenario=SCENARIO, sim_speed=20.0)
    daemon = DaemonProcess(config)
    try:
        daemon.wait_for_log("daemon_started")
        start, end, turns = asyncio.run(drive(daemon, duration_s))
        status = daemon.terminate(timeout_s=20.0)
    finally:
        daemon.kill()
    print(f"\nsoak {duration_s:.0f} s, {turns} turns: start {start} end {end}")
    assert status == 0
    assert turns > 0
    assert end["fds"] <= start["fds"] + 5
    assert end["threads"] <= start["threads"] + 2
    assert end["rss_kib"] <= start["rss_kib"] * 1.5


async def drive(
    daemon: DaemonProcess, duration_s: float
) -> tuple[dict[str, int], dict[str, int], int]:
    pid = daemon.proc.pid
    client = await LineClient.connect(daemon.socket)
    idle = [await LineClient.connect(daemon.socket)]  # left idle: the server's to handle
    turns, rid = 0, 0
    start: dict[str, int] | None = None
    deadline = time.monotonic() + duration_s
    while time.monotonic() < deadline:
        rid += 1
        text = "what time is it" if turns % 2 else "how are you"
        reply = await client.call(rid, "say", text=text)
        assert reply["ok"] is True, reply
        while True:  # one turn at a time: wait until the device is idle again
            rid += 1
            state = await client.call(rid, "status")
            if state["ok"] and state["result"]["state"] == "idle":
                break
            await asyncio.sleep(0.05)
        turns += 1
        if start is None:
            start = resources(pid)
        if turns % 50 == 0:  # a new client now and then
            await client.close()
            client = await LineClient.connect(daemon.socket)
    end = resources(pid)
    await client.close()
    for other in idle:
        await other.close()
    assert start is not None
    return start, end, turns
