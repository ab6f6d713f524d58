"""The whole idle daemon against ``aplay`` + ``arecord`` at the same periods (issue 39).

The real ``huxleyd`` (sim provider, its session open, the callback backend and the C
feeder on the clocked card, 2.5 ms speaker and 10 ms mic periods), idle as systemd
runs it: every thread counted, from the scheduler's nanoseconds
(``/proc/<pid>/task/*/schedstat``) over ``HUXLEYD_BENCH_IDLE_S`` seconds (20 by
default) after it settled. The reference is ``aplay`` + ``arecord`` on the same card
at the same period and buffer sizes (``bench_realtime``'s C reference), measured in
the same way right after. "Loaded": the same, with a busy process (pure Python, one
core) beside both. The label gives the daemon's breakdown: each thread's share of
the daemon's CPU and its wakeups a second (context switches).

``HUXLEYD_BENCH_IDLE_ROUNDS`` (1 by default) repeats each pair, daemon then
reference, and shows the pair of the median ratio with every round's ratio: on a
shared machine whose load moves between the daemon's window and aplay's, one
pair's ratio is one sample (issue 39's runs went from 1.2× to 1.7× an hour apart).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import Row
from bench.bench_realtime import CAPTURE_PERIOD, PLAY_PERIOD, _c_reference
from tests.e2e.process import DaemonProcess
from tests.fakes.clockcard import ClockCardUnavailable
from tests.fakes.daemon_replies import card_config

AREA = "idle cost"
SETTLE_S = 5.0
"""After ``daemon_started``: the session connects and the first idle sleep begins."""


def _threads(pid: int) -> dict[int, tuple[str, int, int]]:
    """Per thread id: (its name, on-CPU ns, context switches). Python does not name its
    OS threads: the main thread (the event loop) and the feeder are named here, the
    others (the audio thread, PortAudio's callbacks, the executor's) by their id."""
    out: dict[int, tuple[str, int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            ns = int((task / "schedstat").read_text().split()[0])
            status = (task / "status").read_text().splitlines()
        except OSError:  # the thread ended meanwhile
            continue
        tid = int(task.name)
        name = "main (event loop)" if tid == pid else comm if comm != "python" else f"tid {tid}"
        switches = sum(int(line.split()[1]) for line in status if "ctxt_switches" in line)
        out[tid] = (name, ns, switches)
    return out


def _daemon(seconds: float) -> tuple[float, str]:
    """The idle daemon's CPU (% of one core) and its breakdown by thread."""
    with tempfile.TemporaryDirectory() as tmp:
        _, config = card_config(Path(tmp), 'name = "idle"\n')
        daemon = DaemonProcess(config, env={"HOME": tmp})
        try:
            daemon.wait_for_log("daemon_started", timeout_s=180)
            time.sleep(SETTLE_S)
            before, start = _threads(daemon.proc.pid), time.monotonic()
            time.sleep(seconds)
            after, wall = _threads(daemon.proc.pid), time.monotonic() - start
        finally:
            daemon.terminate()
    used = {  # threads alive at both ends (one that came or went is counted where it ran)
        tid: (name, ns - before[tid][1], sw - before[tid][2])
        for tid, (name, ns, sw) in after.items()
        if tid in before
    }
    total_ns = sum(ns for _, ns, _ in used.values())
    parts = sorted(used.values(), key=lambda part: -part[1])
    breakdown = ", ".join(
        f"{name} {100 * ns / max(total_ns, 1):.0f} % ({sw / wall:.0f} wakeups/s)"
        for name, ns, sw in parts
        if ns > 0.02 * total_ns or sw / wall >= 5
    )
    return 100 * total_ns / 1e9 / wall, breakdown


def _pair(seconds: float) -> tuple[float, float, str]:
    daemon, breakdown = _daemon(seconds)
    reference = _c_reference(round(seconds), PLAY_PERIOD, CAPTURE_PERIOD)
    return daemon, reference, breakdown


def _median_pair(seconds: float, rounds: int) -> tuple[float, float, str]:
    """The pair of the median ratio over ``rounds``; its breakdown says every round's
    ratio and the pooled one (all the daemon's CPU over all the reference's)."""
    pairs = sorted((_pair(seconds) for _ in range(rounds)), key=lambda p: p[0] / max(p[1], 1e-9))
    daemon, reference, breakdown = pairs[len(pairs) // 2]
    if rounds > 1:
        ratios = ", ".join(f"{d:.2f}/{r:.2f} % = {d / max(r, 1e-9):.2f}×" for d, r, _ in pairs)
        # Every round's seconds in one ratio: a round's share moves with the load
        # in its own window, the sums less so.
        pooled = sum(p[0] for p in pairs) / max(sum(p[1] for p in pairs), 1e-9)
        breakdown += (
            f"; {rounds} rounds (daemon/reference): {ratios}, the median shown; "
            f"all rounds pooled {pooled:.2f}×"
        )
    return daemon, reference, breakdown


def _rows() -> list[Row]:
    seconds = float(os.environ.get("HUXLEYD_BENCH_IDLE_S", "20"))
    rounds = max(1, int(os.environ.get("HUXLEYD_BENCH_IDLE_ROUNDS", "1")))
    rows = []
    for label in ("quiet", "loaded"):
        load = None
        if label == "loaded":
            load = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            daemon, reference, breakdown = _median_pair(seconds, rounds)
        finally:
            if load is not None:
                load.kill()
                load.wait()
        rows.append(
            Row(
                AREA,
                f"whole idle huxleyd (sim, session open) vs aplay + arecord at 120/480 "
                f"frames, {label}, {seconds:g} s; threads: {breakdown}",
                daemon,
                "% of a core",
                reference,
                "% aplay+arecord",
                "≤ 1.3×",
            )
        )
    return rows


def run() -> list[Row]:
    try:
        return _rows()
    except (ClockCardUnavailable, RuntimeError, OSError) as exc:  # say so
        return [Row(AREA, f"idle cost rows not measured: {exc}"[:100], float("nan"), "")]
