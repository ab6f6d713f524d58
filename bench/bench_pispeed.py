"""Pi speed: the engine on the clocked card with only a Pi's share of this CPU.

Scaling: this VM runs Python about 3.5-4x faster per core than a Pi 4 (and a
Zero 2 W is slower still), so a Pi 4 is about 25 % of one core here and a
Zero 2 W under 10 %. Each row runs the ``load`` scenario (speech and ducked
media, as ``bench_realtime``) in a CPU cgroup with that share: cgroup v2's
``cpu.max`` where there is cgroup v2, else the v1 cpu controller's CFS quota,
with ``cpu.rt_runtime_us`` so SCHED_FIFO is still granted to the callbacks (the
quota throttles the Python threads; a FIFO thread is bounded by its RT runtime,
as on a Pi). The figure is the share of the time the speaker was silent, from
the card's recording, with and without a busy Python thread; each row's label
also gives the card's own xruns (speaker, mic) of both runs.

Both mix paths of the callback backend run in the same bench run, one beside
the other: the value is the C feeder's (``audio.mix = "c_feeder"``: no Python in
the speaker path), the reference the Python audio thread's (``"python"``).
``HUXLEYD_BENCH_PI_S`` sets each run's length (20 s by default);
``HUXLEYD_BENCH_PI_ONLY`` runs only the shares whose label starts with it
(``"25 % (a Pi 4)"``) and ``HUXLEYD_BENCH_PI_BUSY`` (``1`` or ``0``) only the runs
with or without the busy thread: ``HUXLEYD_BENCH_PI_ONLY="25 % (a" make bench``
is one scenario. Each label also says how many silences fell while the machine
itself stalled (:mod:`tests.fakes.witness`: a VM's host descheduling it), which no
engine can prevent. Needs root (a cgroup of its own); without one the rows say
why, never a made-up figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench import Row
from tests.fakes.clockcard import (
    ClockCardUnavailable,
    build_plugin,
    child_env,
    silence_spans,
    speaker_silences,
    write_asoundrc,
)
from tests.fakes.cpu_share import NoCgroup, cpu_group
from tests.fakes.witness import Witness

AREA = "pi speed"
RATE = 48_000
CHILD = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "clockcard_child.py"
SHARES = (  # (label, share of one core, CFS period in µs)
    ("100 %", 1.0, 10_000),
    ("50 %", 0.5, 10_000),
    ("25 % (a Pi 4)", 0.25, 10_000),
    ("25 % as 25 ms in every 100 ms", 0.25, 100_000),
    ("5 %", 0.05, 10_000),
)
CARD_PLAYS_ON_NS = 10_000_000
"""How long the card plays on from what the callback had queued (its buffer, 7.5 ms at
2.5 ms periods, with a margin): a stall that began that long before a silence made it."""


def _silent_share(samples: np.ndarray) -> float:
    """% of the speech's span (first to last loud sample) the speaker was silent."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) >= 160)
    if len(loud) < 2:
        return 100.0
    _, silent_ms = speaker_silences(samples, rate_hz=RATE)
    return 100.0 * silent_ms / (float(loud[-1] - loud[0]) * 1000 / RATE)


def _run(
    kind: str, share: float, period_us: int, busy: bool, seconds: float
) -> tuple[float, tuple[int, int], tuple[int, int], str]:
    """One ``load`` run of the ``kind`` mix path: (% silent, the card's (speaker, mic)
    xruns, (silences, of which the machine stalled meanwhile), the period it ended on
    (``"2.5 ms"``, or longer where the engine widened it: :mod:`huxleyd.audio.xrun_watch`))."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        cpu_group(share, period_us) as procs,
        Witness() as witness,
    ):
        directory = Path(tmp)
        card = write_asoundrc(directory)
        env = child_env(directory)
        args = ["load", kind, str(RATE), str(seconds), "1" if busy else "0"]
        done = subprocess.run(
            [sys.executable, str(CHILD), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=600 + 20 * seconds,
            check=False,
            # join the group before exec: every thread of the child is in it
            preexec_fn=lambda: procs.write_text(str(os.getpid())),
        )
        if done.returncode != 0:
            raise RuntimeError(f"child failed: {done.stderr[-300:]}")
        stats = json.loads(done.stdout.strip().splitlines()[-1])
        periods = card.prepared_periods(card.speaker_log)
        period = f"{periods[-1] * 1000 / RATE:g} ms" if periods else "?"
        if stats.get("period_widened"):
            period += " (widened)"
        samples, t0 = card.speaker()
        share_silent = _silent_share(samples)
        xruns = card.xruns()
    spans = silence_spans(samples, rate_hz=RATE)
    stalled = sum(
        witness.covers(
            t0 + start * 10**9 // RATE,
            t0 + (start + length) * 10**9 // RATE,
            before_ns=CARD_PLAYS_ON_NS,
        )
        for start, length in spans
    )
    return share_silent, xruns, (len(spans), stalled), period


def _rows() -> list[Row]:
    seconds = float(os.environ.get("HUXLEYD_BENCH_PI_S", "20"))
    only = os.environ.get("HUXLEYD_BENCH_PI_ONLY", "")
    busy_only = os.environ.get("HUXLEYD_BENCH_PI_BUSY", "")
    rows = []
    for label, share, period_us in SHARES:
        if not label.startswith(only):
            continue
        for busy in (True, False):
            if busy_only and busy != (busy_only == "1"):
                continue
            fed, fed_xruns, fed_stalled, fed_period = _run("fed", share, period_us, busy, seconds)
            python, python_xruns, python_stalled, python_period = _run(
                "callback", share, period_us, busy, seconds
            )
            thread = "busy Python thread" if busy else "no busy thread"
            rows.append(
                Row(
                    AREA,
                    f"speaker silent, CPU {label}, {thread}, {seconds:g} s (C feeder; ref = "
                    f"Python mix; card xruns {fed_xruns} / {python_xruns}; silences, of "
                    f"them while the machine stalled {fed_stalled} / {python_stalled}; "
                    f"speaker period at the end {fed_period} / {python_period})",
                    fed,
                    "% of the time",
                    python,
                    "% Python mix",
                    "0 at a Pi 4's share" if share >= 0.25 else "",
                )
            )
    return rows


def run() -> list[Row]:
    try:
        build_plugin()
        return _rows()
    except (ClockCardUnavailable, NoCgroup, RuntimeError, OSError) as exc:  # say so
        return [Row(AREA, f"pi speed rows not measured: {exc}"[:100], float("nan"), "")]
