"""The soak behind the unit's ``MemoryMax=`` and ``TasksMax=``: the daemon as on a
device, talking to a provider outside its process.

Not run by default (``-m soak``; ``HUXLEY_SOAK_S``, 1800 s by default). The
simulator runs as its own process (``python -m huxleyd.sim``) and the daemon
reaches it as ``kind = "openai"`` over a loopback websocket, so the daemon's
RSS and threads are its own, not the simulator's. Text turns with a tool
call run one after another through the control socket (the soak's
:func:`drive`); RSS and threads are sampled throughout and their peaks
printed: the numbers in ``systemd/huxleyd.service`` come from this.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.process import DaemonProcess, write_daemon_config
from tests.faults.test_soak import SCENARIO, drive, resources


def start_simulator(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m huxleyd.sim`` on a free port; its URL once it listens."""
    scenario = tmp / "outside-scenario.toml"
    scenario.write_text(SCENARIO)
    log = tmp / "sim.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "huxleyd.sim", "--port", "0", "--speed", "20"),
                *("--scenario", str(scenario), "--synth", "tone"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60  # a safety net, not a timing
    while (found := re.search(r"listening on (ws://\S+?)(\?|\s)", log.read_text())) is None:
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return proc, found.group(1)


def point_at(config: Path, url: str) -> None:
    """The daemon's provider: OpenAI's protocol at ``url`` (the simulator), with a key."""
    key = config.parent / "key"
    key.write_text("sk-soak\n")
    key.chmod(0o600)
    text = config.read_text().replace('kind = "sim"', f'kind = "openai"\nurl = "{url}"')
    config.write_text(text.replace("[provider]", f'[provider]\nkey_file = "{key}"'))


async def sample_peaks(pid: int, peaks: dict[str, int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        now = resources(pid)
        for key, value in now.items():
            peaks[key] = max(peaks.get(key, 0), value)
        await asyncio.sleep(1.0)


async def drive_and_sample(daemon: DaemonProcess, duration_s: float) -> tuple[object, ...]:
    peaks: dict[str, int] = {}
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_peaks(daemon.proc.pid, peaks, stop))
    try:
        start, end, turns = await drive(daemon, duration_s)
    finally:
        stop.set()
        await sampler
    return start, end, turns, peaks


@pytest.mark.soak
def test_soak_with_the_provider_outside(tmp_path: Path) -> None:
    duration_s = float(os.environ.get("HUXLEY_SOAK_S", "1800"))
    sim, url = start_simulator(tmp_path)
    config = write_daemon_config(tmp_path, scenario=SCENARIO, sim_speed=20.0)
    point_at(config, url)
    daemon = DaemonProcess(config)
    try:
        daemon.wait_for_log("daemon_started")
        start, end, turns, peaks = asyncio.run(drive_and_sample(daemon, duration_s))
        status = daemon.terminate(timeout_s=20.0)
    finally:
        daemon.kill()
        sim.terminate()
        sim.wait(timeout=20)
    print(f"\nsoak (provider outside) {duration_s:.0f} s, {turns} turns: start {start} end {end}")
    print(f"peaks: {peaks}")
    assert status == 0 and isinstance(turns, int) and turns > 0
    assert "provider_connected" in daemon.output() or "session" in daemon.output()
