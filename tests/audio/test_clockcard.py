"""The engine on the clocked fake card: real time, real xruns, counted (never timed).

Each test runs the engine in a child process on the project's clocked ALSA
plugin (``hw/clockcard``), through the C callback backend, and counts what the
card itself saw (its xrun log) and what the callbacks reported.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fakes.children import run_json_child
from tests.fakes.clockcard import (
    ClockCard,
    ClockCardUnavailable,
    build_plugin,
    child_env,
    freeze_once,
    largest_step,
    silent_from,
    write_asoundrc,
)

pytestmark = pytest.mark.clockcard


def realtime_allowed() -> bool:
    """Whether this process may run a SCHED_FIFO thread (root, CAP_SYS_NICE, rtprio)."""
    result: list[bool] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except PermissionError:
            result.append(False)
        else:
            result.append(True)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return result[0]


@pytest.fixture
def card(tmp_path: Path) -> ClockCard:
    try:
        build_plugin()
    except ClockCardUnavailable as exc:
        pytest.skip(str(exc))
    return write_asoundrc(tmp_path)


def run(card: ClockCard, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = run_json_child(
        ["-m", "tests.fakes.clockcard_child", *args], child_env(card.directory), timeout_s=120
    )
    return result


def test_a_busy_python_thread_causes_no_xrun(card: ClockCard) -> None:
    """Speech and ducked content for 6 s of audio while another Python thread spins:
    neither the card nor the speaker callback sees one xrun (the deadline is out of
    the GIL). What the Python side of the engine loses meanwhile is the next test."""
    if not realtime_allowed():
        pytest.skip("no SCHED_FIFO here: the callback threads would compete with the load")
    blamed: list[tuple[int, int]] = []  # loaded runs whose twin without the thread had none
    for _ in range(3):
        result = run(card, "load", "callback", "48000", "6", "1")
        if card.xruns() == (0, 0):  # the card's own count: speaker, mic
            break
        # Was it the busy thread, or a machine that did not keep time? The same
        # run without the thread, on a fresh card, tells them apart; a single
        # pair can be chance on a loaded machine, so only a thread that is
        # blamed every time fails (the blocking design had 53-148 xruns a run).
        loaded = card.xruns()
        card = write_asoundrc(card.directory)
        run(card, "load", "callback", "48000", "6", "0")
        if card.xruns() == (0, 0):
            blamed.append(loaded)
        card = write_asoundrc(card.directory)
    else:
        assert len(blamed) < 3, f"the busy thread caused xruns in every run: {blamed}"
        pytest.skip("the card underran without the busy thread too: no deadline kept here")
    assert result["underruns"] == 0  # the speaker callback's flags
    assert result["device_state"] == "open" and result["faults"] == 0
    heard, _ = card.speaker()
    assert len(heard) >= 48000 * 6  # it really played the 6 s


def test_a_busy_python_thread_loses_no_mic_period(card: ClockCard) -> None:
    """The engine's Python side under the same load: its periods may start late (the
    busy thread holds the GIL for up to a switch interval at each hand-off), but it
    loses no mic period. The arithmetic keeps the GIL (the C kernel: no hand-off per
    numpy call), and a late cycle drains every period the capture ring already holds
    instead of one, so it catches up before the ring's 500 ms run out.

    The numpy engine that read one period per cycle lost 62 mic periods in 6 s on
    an idle machine, and 3 and 20 in two 20 s runs on a loaded 2-core one (where
    the busy thread is descheduled often, which hides the loss in shorter runs)."""
    if not realtime_allowed():
        pytest.skip("no SCHED_FIFO here: the callback threads would compete with the load")
    for _ in range(3):
        result = run(card, "load", "callback", "48000", "20", "1")
        if card.xruns()[1] == 0:
            break
        # The card's own capture overran: the machine did not run the capture
        # callback in time, which says nothing of the engine (measured once, 1
        # overrun, on a busy CI host). What the engine loses is counted below.
        card = write_asoundrc(card.directory)
    else:
        pytest.skip(f"the card's capture overran in every run ({card.xruns()[1]} in the last)")
    assert result["overruns"] == 0  # capture callback flags + periods overwritten unread
    assert result["mic_frames_dropped"] == 0  # and none lost on the way to asyncio
    assert result["periods"] + result["caught_up"] >= 20 * 50  # it really read 20 s


def test_a_cut_is_silent_within_one_short_period_and_truncates_at_the_fade_end(
    card: ClockCard,
) -> None:
    """Barge-in measured in time on the card, checked by counts: every cut ends in
    silence, no cut clicks, and audio_end_ms matches what the recording holds."""
    for _ in range(3):
        result = run(card, "bargein", "callback", "48000", "6")
        if card.xruns()[0] == 0:
            break
        # The card underran: this machine did not give the callback its
        # deadline, and a gap in the tone would read as a click of the cut.
        card = write_asoundrc(card.directory)  # a new run starts from nothing
    else:
        pytest.skip(f"the card underran in every run ({card.xruns()[0]} xruns in the last)")
    heard, t0 = card.speaker()
    rate = 48000
    for press, end_ms, wrote in zip(
        result["press_ns"], result["audio_end_ms"], result["write_ns"], strict=True
    ):
        at = (press - t0) * rate // 10**9
        silent = silent_from(heard, at, rate_hz=rate)
        assert silent < len(heard)  # the cut happened
        start = (wrote - t0) * rate // 10**9
        onset = start + int(np.flatnonzero(np.abs(heard[start:]) >= 160)[0])
        heard_ms = (silent - onset) * 1000 / rate
        # the fade (5 ms of a -6 dBFS tone) never jumps more than the tone itself
        assert largest_step(heard, at, silent + rate // 100) < 1000
        # exact to the device period, not to the engine period (20 ms) or the buffer
        assert abs(end_ms - heard_ms) <= 5


@pytest.mark.parametrize("kind", ["blocking", "callback"])
def test_one_xrun_is_a_short_silence_never_a_reopen(card: ClockCard, kind: str) -> None:
    """Issue 13, case 7: the daemon freezes for 100 ms while it plays, so the card
    really underruns. The stream recovers in place: no reopen, and the silence after
    the daemon runs again is at most one engine period (it was a 3 s outage)."""
    silences = []
    for _ in range(3):
        silence_ms, reopens = freeze_once(card.directory, kind)
        assert reopens == 0  # in every run: a reopen is never a matter of load
        silences.append(silence_ms)
        if silence_ms <= 20 + 5:  # one engine period, plus the card's own period
            break
        # Longer: the machine did not run the thawed daemon at once (measured 26 ms
        # once on a busy CI host against 7.5 ms idle). A recovery that really costs
        # more than a period is longer in every run.
    assert min(silences) <= 20 + 5, f"silence after one xrun, ms, per run: {silences}"


def test_an_idle_engine_runs_no_python_per_period(card: ClockCard) -> None:
    """Nothing plays, nobody listens: the thread sleeps on the doorbell (the C
    callbacks keep the card going) and wakes only for housekeeping, 2 Hz, not 50."""
    result = run(card, "idle", "callback", "48000", "3")
    assert result["idle_periods"] >= 100  # the card's clock went on (3 s of 20 ms)
    assert result["idle_cycles"] <= result["idle_periods"] // 10
    assert result["sleeps"] >= 3
    assert card.xruns() == (0, 0)


def test_a_delta_wakes_the_sleeping_engine_and_is_heard(card: ClockCard) -> None:
    """From idle (asleep), each write rings the doorbell: the tone is mixed at once
    and reaches the card; ``drained`` returns (the DAC clock kept publishing)."""
    result = run(card, "first", "callback", "48000", "3")
    heard, t0 = card.speaker()
    rate = 48000
    for sent in result["sent_ns"]:
        at = (sent - t0) * rate // 10**9
        assert np.any(np.abs(heard[at : at + rate // 5]) >= 160)  # within the 0.1 s tone's span
