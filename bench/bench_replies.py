"""Replies with a busy Python thread at a Pi 4's share: holes and silences by cause.

The real daemon (sim provider, the clocked card, a busy Python thread in it, a CPU
cgroup at 25 % of one core: :mod:`tests.fakes.daemon_replies`) answers
``HUXLEYD_BENCH_REPLIES_N`` replies (50 by default), each a 400 ms tone. Rows: the
replies with a hole inside them, judged on the card's recording (replies near a card
xrun or a reopen are left out and counted in the label: there the machine missed the
clock), and the daemon's own silences by cause (``huxleyctl status``), which must
agree. Needs root for the cgroup; without one the label says the share was the
machine's.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench import Row
from tests.fakes.clockcard import ClockCardUnavailable
from tests.fakes.daemon_replies import card_disturbances, judge, run_replies

AREA = "replies"


def _rows() -> list[Row]:
    count = int(os.environ.get("HUXLEYD_BENCH_REPLIES_N", "50"))
    with tempfile.TemporaryDirectory() as tmp:
        run = run_replies(Path(tmp), count)
        verdict = judge(run.samples, card_disturbances(run.card), run.stalls, run.card.speaker()[1])
    share = "CPU 25 % (a Pi 4)" if run.grouped else "no cgroup: the machine's full CPU"
    judged = len(verdict.holes)
    s = run.silences
    rows = [
        Row(
            AREA,
            f"replies with a hole, of {judged} judged on the recording ({count} played, "
            f"{len(verdict.disturbed)} beside a card xrun or reopen), busy Python thread, {share}",
            len(verdict.with_holes),
            "replies",
            budget="0",
        )
    ]
    for key, ms_key, label in (
        ("card_xruns", "", "card xruns"),
        ("dry_ring", "dry_ring_ms", "dry ring"),
        ("late_source", "late_source_ms", "late source"),
        ("reopens", "reopen_ms", "reopen"),
    ):
        ms = f", {float(s.get(ms_key, 0.0)):g} ms in all" if ms_key else ""
        rows.append(
            Row(
                AREA,
                f"silences counted by the daemon: {label}{ms} ({count} replies, busy thread, "
                f"{share})",
                float(s.get(key, 0)),
                "",
                budget="0" if key != "card_xruns" else "",
            )
        )
    return rows


def run() -> list[Row]:
    try:
        return _rows()
    except (ClockCardUnavailable, OSError) as exc:  # say so, never a made-up figure
        return [Row(AREA, f"replies rows not measured: {exc}"[:100], float("nan"), "")]
