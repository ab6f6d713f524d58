"""The daemon as a whole: idle CPU and memory, and a stalled event loop.

- **Idle**: the real daemon process (WAV card at real time, mock pins) as
  it runs with a key: ``kind = "openai"`` pointed at the simulator running
  in a process of its own, so the daemon loads what production loads; left
  alone for a few seconds; CPU from ``/proc/<pid>/stat`` over the window,
  RSS from ``/proc/<pid>/status``; beside the budgets.
- **Stall**: the engine streams speech with the default ring sizes while
  asyncio is blocked for 500 ms (a slow skill, a GC pause); underruns,
  source gaps and lost mic frames counted, with too-shallow rings beside
  it as the reference that shows the count can be non-zero.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import Row
from tests.e2e.process import DaemonProcess, write_daemon_config
from tests.fakes.audio_stall import stall_scenario

AREA = "daemon"
IDLE_WINDOW_S = 10.0
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _production_like_config(tmp: Path, port: int) -> Path:
    """The daemon with a key and a provider URL: no simulator inside it."""
    config = write_daemon_config(tmp, scenario='name = "idle"\n', sim_speed=1.0)
    (tmp / "key").write_text("sk-bench\n")
    text = config.read_text().replace(
        'kind = "sim"',
        f'kind = "openai"\nurl = "ws://127.0.0.1:{port}/v1/realtime"\nkey_file = "key"',
    )
    # A sound card plays to the speaker; it writes no file. Without a card the
    # WAV backend plays to nowhere, which is the closer stand-in here.
    text = "\n".join(line for line in text.splitlines() if not line.startswith("speaker_wav"))
    config.write_text(text)
    return config


def _idle_rows() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        sim = subprocess.Popen(
            [sys.executable, "-m", "huxleyd.sim", "--port", str(port), "--synth", "tone"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        daemon = DaemonProcess(_production_like_config(Path(tmp), port))
        try:
            deadline = time.monotonic() + 30
            while "provider_connected" not in daemon.output():
                if time.monotonic() > deadline or daemon.proc.poll() is not None:
                    raise RuntimeError(f"the daemon did not start:\n{daemon.output()}")
                time.sleep(0.1)
            time.sleep(1.0)  # let start-up work settle
            pid = daemon.proc.pid
            before, started = _cpu_ticks(pid), time.monotonic()
            time.sleep(IDLE_WINDOW_S)
            cpu = (_cpu_ticks(pid) - before) / TICKS / (time.monotonic() - started) * 100
            rss = _rss_mb(pid)
        finally:
            daemon.terminate()
            sim.terminate()
            sim.wait(timeout=10)
    return [
        Row(
            AREA,
            "idle CPU (audio thread at real time, session open)",
            cpu,
            "%",
            1.0,
            "budget",
            "≤ 1 %",
        ),
        Row(AREA, "idle RSS", rss, "MB", 80.0, "budget", "≤ 80 MB"),
    ]


def _stall_rows() -> list[Row]:
    async def measure(lead_ms: int, capture_ms: int) -> tuple[int, int]:
        engine, _backend, _frames, _mic = await stall_scenario(
            lead_ms=lead_ms, capture_ring_ms=capture_ms
        )
        stats = engine.stats()
        return stats.underruns + stats.source_gaps, stats.mic_frames_dropped

    glitches, lost = asyncio.run(measure(1000, 2000))
    shallow_glitches, shallow_lost = asyncio.run(measure(100, 200))
    return [
        Row(
            AREA,
            "loop stalled 500 ms: audible glitches",
            glitches,
            "",
            shallow_glitches,
            "with 100 ms rings",
            "0",
        ),
        Row(
            AREA,
            "loop stalled 500 ms: lost mic frames",
            lost,
            "frames",
            shallow_lost,
            "with 200 ms capture ring",
            "0",
        ),
    ]


def run() -> list[Row]:
    return [*_idle_rows(), *_stall_rows()]
