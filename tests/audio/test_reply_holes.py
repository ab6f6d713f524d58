"""Replies start only when they can keep going: the real daemon, a busy Python thread
in it, at a Pi 4's CPU share, on the clocked card (issue 39).

With a busy Python thread the event loop stalls 100-200 ms between two deltas; a reply
that started on its first delta then ran dry about 35 ms in (10 of 12 replies had a
hole of 20-50 ms). The C feeder's playout buffer holds each start until enough is
queued (``_feedthread.c``'s hold_step). Judged on the card's recording, never on
counters (:mod:`tests.fakes.daemon_replies`).

``HUXLEYD_REPLY_HOLES_N`` sets how many replies (6 in the suite, 50 for the report
run; the bench's ``replies`` module runs 50). Without a CPU cgroup (not root, no cpu
controller) the daemon runs at the machine's full share and the output says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fakes.clockcard import ClockCardUnavailable
from tests.fakes.daemon_replies import REPLY_MS, Verdict, card_disturbances, judge, run_replies
from tests.fakes.realtime import RealTime

pytestmark = pytest.mark.clockcard


def test_every_reply_plays_without_a_hole_with_a_busy_thread_at_a_pi4_share(
    tmp_path: Path, realtime: RealTime
) -> None:
    """Judged on the replies the machine kept in time: a card xrun (or the reopen the
    period ladder makes after several), or a hole that fell while the whole machine
    stalled (a witness thread above the daemon's priority was held up too: a VM's
    host), says the machine missed the clock, not that a reply started too early; a
    run where more than a third of the replies were so disturbed proves nothing and is
    tried again (then skipped for load)."""
    count = int(os.environ.get("HUXLEYD_REPLY_HOLES_N", "6"))
    runs = iter(range(1, 10))

    def attempt() -> tuple[tuple[Verdict, str, dict[str, object]], str | None]:
        tmp = tmp_path / f"try{next(runs)}"
        tmp.mkdir()
        try:
            run = run_replies(tmp, count)
        except ClockCardUnavailable as exc:
            pytest.skip(str(exc))
        verdict = judge(run.samples, card_disturbances(run.card), run.stalls, run.card.speaker()[1])
        print(
            f"cgroup {'25 %' if run.grouped else 'none'}; replies {len(verdict.lengths)}; "
            f"not judged (card xrun or reopen) {verdict.disturbed}; "
            f"holes {verdict.with_holes}; lengths {verdict.lengths}; "
            f"silences {run.silences}"
        )
        why = None
        if len(verdict.disturbed) * 3 > count:
            why = f"the card xran or reopened during {len(verdict.disturbed)} of {count} replies"
        return (verdict, run.said, run.silences), why

    verdict, said, silences = realtime.kept(attempt, tries=2)
    assert len(verdict.lengths) == count, (verdict.lengths, said)
    assert not verdict.with_holes, (verdict.with_holes, said)
    for i, length in enumerate(verdict.lengths):  # each reply whole, give or take its fades
        assert i in verdict.disturbed or REPLY_MS - 15 <= length <= REPLY_MS + 5, verdict.lengths
    assert silences.get("late_source") == 0, silences  # and the daemon counted none either
