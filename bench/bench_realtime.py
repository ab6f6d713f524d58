"""Real time on the clocked fake card: the goals of the real-time audio core, before and after.

Every row runs the engine in a child process on the project's clocked ALSA
plugin (``hw/clockcard``, built here), which behaves like a DMA card: its
pointer moves with the monotonic clock in whole periods, xruns are real and
logged, and the speaker recording is time-stamped. Each "after" row (the C
callback backend) has its "before" (PyAudio blocking I/O, the previous
design) as the reference, measured in the same run, when
``HUXLEYD_BENCH_BEFORE_ROOT`` names a checkout from before issue 39 (that backend
left this tree then; without one the references read nan, and
docs/architecture.md keeps the last numbers measured); the idle row has a C
reference doing the same device I/O (``arecord`` + ``aplay``).

``HUXLEYD_BENCH_XRUN_S`` sets the length of the xrun rows (60 s by default);
``HUXLEYD_BENCH_REALTIME_ONLY`` (``cuts``, ``xruns``, ``idle``, ``first``, ``freeze``,
comma-separated) runs only those rows: ``HUXLEYD_BENCH_REALTIME_ONLY=idle python -m
bench realtime`` is the idle rows alone.
``HUXLEYD_BENCH_BEFORE_ROOT`` runs the "before" rows on another checkout's
``huxleyd`` (e.g. the main branch), so "before" is exactly the old code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import Row
from tests.fakes.children import run_json_child
from tests.fakes.clockcard import (
    ClockCard,
    ClockCardUnavailable,
    bargein_cuts,
    build_plugin,
    child_env,
    freeze_once,
    largest_step,
    speaker_silences,
    write_asoundrc,
)

AREA = "realtime"
RATE = 48_000
BEFORE, AFTER = "blocking", "callback"
DEFAULT = "fed"
"""What the daemon runs: the callback backend fed by the C feeder, its idle cost
the one a user pays. ("callback", AFTER, is the same card with the audio thread
writing the ring: the engine's ``feeder=False``.)"""
NAN = float("nan")


def _has_before() -> bool:
    """The "before" rows need an older huxleyd (the blocking backend left in issue 39)."""
    return bool(os.environ.get("HUXLEYD_BENCH_BEFORE_ROOT"))


GROUPS = ("cuts", "xruns", "idle", "first", "freeze")
CUTS = 16
"""Barge-ins per design."""
PLAY_PERIOD, CAPTURE_PERIOD = 120, 480
"""The callback backend's device periods at 48 kHz (2.5 ms, 10 ms)."""


CHILD = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "clockcard_child.py"


def _env(directory: Path, kind: str) -> dict[str, str]:
    env = child_env(directory)
    before_root = os.environ.get("HUXLEYD_BENCH_BEFORE_ROOT")
    if kind == BEFORE and before_root:
        env["PYTHONPATH"] = before_root  # the child imports only huxleyd
    return env


def _child(directory: Path, *args: str) -> tuple[ClockCard, dict[str, Any]]:
    card = write_asoundrc(directory)
    result: dict[str, Any] = run_json_child(
        [str(CHILD), *args], _env(directory, args[1]), timeout_s=600
    )
    return card, result


def _bargein(kind: str) -> dict[str, float]:
    """The cut rows, over the cuts the machine kept in time (tests/fakes/clockcard.py
    ``bargein_cuts``: the tone reached the card without a gap before the press):
    a gap from a loaded machine is not the cut's doing. How many were is a row."""
    with tempfile.TemporaryDirectory() as tmp:
        card, result = _child(Path(tmp), "bargein", kind, str(RATE), str(CUTS))
        heard, _ = card.speaker()
        cuts = bargein_cuts(card, result, rate_hz=RATE)
    kept = [cut for cut in cuts if cut.kept] or cuts  # none kept: all, and the row says so
    tone_step = 32767 * 10 ** (-6 / 20) * 2 * np.pi * 440 / RATE  # the tone's own largest step
    silences = [(cut.silent - cut.at) * 1000 / RATE for cut in kept]
    return {
        "mean": float(np.mean(silences)),
        "max": float(np.max(silences)),
        "truncate": max(abs(cut.end_ms - cut.heard_ms) for cut in kept),
        "click": max(largest_step(heard, c.at, c.silent + RATE // 100) for c in kept) / tone_step,
        "kept": float(sum(cut.kept for cut in cuts)),
    }


def _xruns(kind: str, seconds: float, busy: bool) -> tuple[int, int, int]:
    """(xruns at the card + source gaps, mic periods the engine lost, silences the
    card's recording holds inside the speech)."""
    with tempfile.TemporaryDirectory() as tmp:
        card, result = _child(
            Path(tmp), "load", kind, str(RATE), str(seconds), "1" if busy else "0"
        )
        speaker, mic = card.xruns()
        # what the listener heard: the callback feeds the card zeros when its ring
        # runs dry, which no xrun count sees (issue 26: 1-5 a minute, 0 counted)
        silences, _ = speaker_silences(card.speaker()[0], rate_hz=RATE)
    # the card's own count (speaker + mic): the ground truth for both designs (the
    # callbacks' flags see the same events), plus gaps the card cannot see: a source
    # that ran dry inside an item
    card_count = speaker + mic + int(result["source_gaps"])
    # what the card cannot see either: mic periods the engine's Python side read too
    # late (overwritten in the capture ring) or asyncio never took
    lost = int(result["overruns"]) + int(result.get("mic_frames_dropped", 0))
    return card_count, lost, silences


def _idle(kind: str, seconds: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        _, result = _child(Path(tmp), "idle", kind, str(RATE), str(seconds))
    return 100 * float(result["cpu_s"]) / float(result["wall_s"])


def _c_reference(seconds: int, play_period: int, capture_period: int) -> float:
    """arecord + aplay on the same card, same rate and periods, SCHED_FIFO like ours,
    measured as the engine is: over ``seconds`` after a second of warm-up (their
    start-up, ALSA's configuration parsed, is not idle cost), from the scheduler's
    nanosecond count (``/proc/<pid>/schedstat``; both are single-threaded)."""
    aplay, arecord, chrt = shutil.which("aplay"), shutil.which("arecord"), shutil.which("chrt")
    if aplay is None or arecord is None:
        raise RuntimeError("aplay/arecord not installed (alsa-utils)")
    rt = [chrt, "-f", "50"] if chrt is not None and os.geteuid() == 0 else []
    fmt = ["-q", "-t", "raw", "-f", "S16_LE", "-r", str(RATE), "-c", "1"]
    runs = seconds + 3  # past the window at both ends
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_asoundrc(directory)
        silence = directory / "silence.raw"
        silence.write_bytes(bytes(RATE * 2 * runs))
        env = child_env(directory)
        periods = {arecord: capture_period, aplay: play_period}
        devices = {arecord: ["-D", "hux_mic", "-d", str(runs)], aplay: ["-D", "hux_spk"]}
        files = {arecord: "/dev/null", aplay: str(silence)}
        procs = [
            subprocess.Popen(
                [
                    *rt,
                    tool,
                    *devices[tool],
                    *fmt,
                    f"--period-size={periods[tool]}",
                    f"--buffer-size={periods[tool] * 3}",
                    files[tool],
                ],
                env=env,
            )
            for tool in (arecord, aplay)
        ]
        try:
            time.sleep(1.0)  # as the engine's child: opened and warm
            before, start = sum(_on_cpu_ns(p.pid) for p in procs), time.monotonic()
            time.sleep(seconds)
            used_ns, wall = sum(_on_cpu_ns(p.pid) for p in procs) - before, time.monotonic() - start
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()
    return 100 * used_ns / 1e9 / wall


def _on_cpu_ns(pid: int) -> int:
    """Nanoseconds the (single-threaded) process ``pid`` has run."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def _one_xrun(kind: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        return freeze_once(Path(tmp), kind, pythonpath=_env(Path(tmp), kind)["PYTHONPATH"])


def _first_sample(kind: str, count: int = 10) -> float:
    """Mean ms from a delta handed to the engine (idle) to its first sample at the DAC."""
    with tempfile.TemporaryDirectory() as tmp:
        card, result = _child(Path(tmp), "first", kind, str(RATE), str(count))
        heard, t0 = card.speaker()
    waits = []
    for sent in result["sent_ns"]:
        at = (sent - t0) * RATE // 10**9
        onset = at + int(np.flatnonzero(np.abs(heard[at:]) >= 160)[0])
        waits.append((onset - at) * 1000 / RATE)
    return float(np.mean(waits))


def _first_streamed(kind: str, *, lone: bool, count: int = 10) -> float:
    """Mean ms from a reply's first 40 ms delta to its first sample at the DAC: the
    reply streamed back to back, its end marked (``lone``: one delta, nothing after)."""
    with tempfile.TemporaryDirectory() as tmp:
        card, result = _child(
            Path(tmp), "streamed", kind, str(RATE), str(count), "1" if lone else "0"
        )
        heard, t0 = card.speaker()
    waits = []
    for sent in result["sent_ns"]:
        at = (sent - t0) * RATE // 10**9
        onset = at + int(np.flatnonzero(np.abs(heard[at:]) >= 160)[0])
        waits.append((onset - at) * 1000 / RATE)
    return float(np.mean(waits))


def _cut_rows() -> list[Row]:
    after, fed = _bargein(AFTER), _bargein(DEFAULT)
    before = (
        _bargein(BEFORE)
        if _has_before()
        else {key: NAN for key in ("mean", "max", "click", "truncate", "kept")}
    )
    return [
        Row(
            AREA,
            f"press → speaker silent, C feeder (the default), mean of {fed['kept']:g} judged",
            fed["mean"],
            "ms",
            budget="≤ 12 ms (issue 39: not worse than 11.5)",
        ),
        Row(
            AREA,
            f"press → speaker silent, C feeder (the default), max of {fed['kept']:g} judged",
            fed["max"],
            "ms",
            budget="≤ 15 ms (issue 39: not worse than 12.6)",
        ),
        Row(
            AREA,
            "press → speaker silent, mean of 16 (after; ref = before)",
            after["mean"],
            "ms",
            before["mean"],
            "ms before",
            "≤ 12 ms",
        ),
        Row(
            AREA,
            "press → speaker silent, max of 16 (after; ref = before)",
            after["max"],
            "ms",
            before["max"],
            "ms before",
            "≤ 15 ms",
        ),
        Row(
            AREA,
            "cut: largest step / the tone's own (after; ref = before)",
            after["click"],
            "×",
            before["click"],
            "× before",
            "≤ 1.1 (no click)",
        ),
        Row(
            AREA,
            "truncate |audio_end_ms − heard|, max (after; ref = before)",
            after["truncate"],
            "ms",
            before["truncate"],
            "ms before",
            "≤ 5 ms",
        ),
        Row(
            AREA,
            f"cuts judged: the tone reached the card without a gap, of {CUTS} (after; ref = before)",
            after["kept"],
            "cuts",
            before["kept"],
            "cuts before",
            f"{CUTS} (fewer: a loaded machine)",
        ),
    ]


def _xrun_rows() -> list[Row]:
    xrun_s = float(os.environ.get("HUXLEYD_BENCH_XRUN_S", "60"))
    rows = []
    for busy, label in ((False, "no load"), (True, "busy Python thread")):
        after_card, after_lost, after_silent = _xruns(AFTER, xrun_s, busy)
        before_card, before_lost, before_silent = (
            _xruns(BEFORE, xrun_s, busy) if _has_before() else (NAN, NAN, NAN)
        )
        rows.append(
            Row(
                AREA,
                f"xruns at the card, {xrun_s:g} s speech + ducked media, {label} (after; ref = before)",
                after_card,
                "xruns",
                before_card,
                "xruns before",
                "0",
            )
        )
        rows.append(
            Row(
                AREA,
                f"speaker silences > 1 ms in the recording, same run, {label} (after; ref = before)",
                after_silent,
                "silences",
                before_silent,
                "silences before",
                "0",
            )
        )
        rows.append(
            Row(
                AREA,
                f"mic periods lost by the engine, same run, {label} (after; ref = before)",
                after_lost,
                "periods",
                before_lost,
                "periods before",
                "0",
            )
        )
    return rows


def _idle_rows() -> list[Row]:
    rows = []
    idle_s = 10
    rows.append(
        Row(
            AREA,
            "idle daemon CPU, 48 kHz card, after: the C feeder, the default "
            "(ref = arecord + aplay, same I/O)",
            _idle(DEFAULT, idle_s),
            "%",
            _c_reference(idle_s, PLAY_PERIOD, CAPTURE_PERIOD),
            "% C",
            "≤ 1.5× C",
        )
    )
    rows.append(
        Row(
            AREA,
            "idle daemon CPU, 48 kHz card, before (ref = arecord + aplay, same I/O)",
            _idle(BEFORE, idle_s) if _has_before() else NAN,
            "%",
            _c_reference(idle_s, 960, 960),
            "% C",
            "≤ 1.5× C",
        )
    )
    return rows


def _first_rows() -> list[Row]:
    rows = []
    rows.append(
        Row(
            AREA,
            "delta received → first sample at the DAC, mean of 10 (after; ref = before)",
            _first_sample(AFTER),
            "ms",
            _first_sample(BEFORE) if _has_before() else NAN,
            "ms before",
            "≤ 30 ms",
        )
    )
    rows.append(
        Row(
            AREA,
            "delta received → first sample at the DAC, C feeder (the default, its playout "
            "buffer included), mean of 10",
            _first_sample(DEFAULT),
            "ms",
            budget="≤ 30 ms",
        )
    )
    rows.append(
        Row(
            AREA,
            "first 40 ms delta of a streamed reply → first sample at the DAC, mean of 10 "
            "(the C feeder's playout buffer included)",
            _first_streamed(DEFAULT, lone=False),
            "ms",
            budget="≤ 30 ms",
        )
    )
    rows.append(
        Row(
            AREA,
            "a lone 40 ms delta, no end marked, nothing after → first sample (the playout "
            "buffer waits twice its target: 600 ms at start)",
            _first_streamed(DEFAULT, lone=True),
            "ms",
        )
    )
    return rows


def _freeze_rows() -> list[Row]:
    rows = []
    extra, reopens = _one_xrun(AFTER)
    extra_before, reopens_before = _one_xrun(BEFORE) if _has_before() else (NAN, NAN)
    rows.append(
        Row(
            AREA,
            "one xrun (daemon frozen 100 ms): longest silence after (after; ref = before)",
            extra,
            "ms",
            extra_before,
            "ms before",
            "≤ 1 period (20 ms)",
        )
    )
    rows.append(
        Row(
            AREA,
            "one xrun: stream reopens (after; ref = before)",
            reopens,
            "reopens",
            reopens_before,
            "reopens before",
            "0",
        )
    )
    return rows


def _rows() -> list[Row]:
    wanted = os.environ.get("HUXLEYD_BENCH_REALTIME_ONLY", ",".join(GROUPS)).split(",")
    unknown = sorted(set(wanted) - set(GROUPS))
    if unknown:
        raise RuntimeError(f"HUXLEYD_BENCH_REALTIME_ONLY: unknown {unknown}, expected {GROUPS}")
    makers = {
        "cuts": _cut_rows,
        "xruns": _xrun_rows,
        "idle": _idle_rows,
        "first": _first_rows,
        "freeze": _freeze_rows,
    }
    return [row for group in GROUPS if group in wanted for row in makers[group]()]


def run() -> list[Row]:
    try:
        build_plugin()
        return _rows()
    except (ClockCardUnavailable, RuntimeError, OSError) as exc:  # say so, do not fake it
        return [Row(AREA, f"clocked card rows not measured: {exc}"[:100], float("nan"), "")]
