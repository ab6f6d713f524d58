"""Replies start only when they can keep going: the real daemon, a busy Python thread
in it, at a Pi 4's CPU share, on the clocked card (issue 39).

With a busy Python thread the event loop stalls 100-200 ms between two deltas; a reply
that started on its first delta then ran dry about 35 ms in (10 of 12 replies had a
hole of 20-50 ms). The C feeder's playout buffer holds each start until enough is
queued (``_feedthread.c``'s hold_step). Judged on the card's recording, never on
counters: each reply is one 440 Hz tone; inside it, any quiet run longer than 1 ms
is a hole the listener heard.

``HUXLEYD_REPLY_HOLES_N`` sets how many replies (8 in the suite, 50 for the report
run and the bench). Without a CPU cgroup (not root, no cpu controller) the test runs
at the machine's full share and says so in its skip of the cgroup part: a busy thread
alone still starves the loop, less often.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.process import DaemonProcess, ctl, write_daemon_config
from tests.fakes.clockcard import ClockCard, ClockCardUnavailable, build_plugin, write_asoundrc
from tests.fakes.cpu_share import PI4_PERIOD_US, PI4_SHARE, NoCgroup, cpu_group
from tests.fakes.realtime import RealTime

pytestmark = pytest.mark.clockcard

RATE = 48_000
REPLY_MS = 400
BUSY_SITE = Path(__file__).resolve().parents[1] / "fakes" / "busy_site"
BETWEEN_MS = 250
"""Quiet longer than this separates two replies on the recording (the test waits
600 ms between them); shorter quiet inside a reply is a hole."""


def replies_scenario(count: int) -> str:
    turns = [
        f'[[turns]]\nhear = "reply {i}"\n[[turns.responses]]\nsay = "tone {i}"\n'
        f"tone_hz = 440.0\nduration_ms = {REPLY_MS}\n"
        for i in range(count)
    ]
    return 'name = "replies"\n' + "".join(turns)


def reply_spans(samples: np.ndarray, *, threshold: int = 160) -> list[tuple[int, int]]:
    """The replies on the recording: [first loud, last loud] runs apart by > BETWEEN_MS."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) >= threshold)
    if len(loud) == 0:
        return []
    breaks = np.flatnonzero(np.diff(loud) > RATE * BETWEEN_MS // 1000)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    ends = np.concatenate([loud[breaks], [loud[-1]]])
    return [(int(a), int(b) + 1) for a, b in zip(starts, ends, strict=True)]


def holes_in(samples: np.ndarray, start: int, end: int, *, threshold: int = 160) -> list[float]:
    """Quiet runs longer than 1 ms inside [start, end), in ms (a 440 Hz tone at -10 dBFS
    is below the threshold for one sample at a zero crossing)."""
    loud = np.flatnonzero(np.abs(samples[start:end].astype(np.int32)) >= threshold)
    gaps = np.diff(loud) - 1
    return [float(g) * 1000 / RATE for g in gaps if g > RATE // 1000]


@contextlib.contextmanager
def pi4_share() -> Iterator[Path | None]:
    try:
        with cpu_group(PI4_SHARE, PI4_PERIOD_US) as procs:
            yield procs
    except NoCgroup:
        yield None


def run_replies(tmp: Path, count: int) -> tuple[np.ndarray, str, ClockCard, bool]:
    """``count`` replies of the real daemon with a busy thread at a Pi 4's share:
    (the speaker's recording, what the daemon and the card said, whether the cgroup
    was had)."""
    build_plugin()
    card = write_asoundrc(tmp)
    sounds = tmp / "sounds"  # no earcons: the recording holds the replies alone
    sounds.mkdir()
    config = write_daemon_config(
        tmp, scenario=replies_scenario(count), sounds_dir=sounds, sim_speed=1.0
    )
    text = config.read_text().replace(
        'backend = "wav"\nspeaker_wav = "huxleyd-speaker.wav"',
        'backend = "callback"\ncapture_device = "hux_mic"\nplayback_device = "hux_spk"\n'
        "device_rate_hz = 48000",
    )
    config.write_text(text)
    env = {
        "HOME": str(tmp),
        "HUXLEYD_TEST_BUSY_THREAD": "1",
        "PYTHONPATH": os.pathsep.join([str(BUSY_SITE), os.environ.get("PYTHONPATH", "")]),
    }
    with pi4_share() as procs:
        daemon = DaemonProcess(config, env=env)
        try:
            if procs is not None:  # the whole process, every thread it has or starts
                procs.write_text(str(daemon.proc.pid))
            daemon.wait_for_log("daemon_started", timeout_s=180)
            for i in range(count):
                deadline = time.monotonic() + 120
                while True:
                    try:
                        ctl(daemon.socket, "say", f"reply {i}", exit_codes=(0,))
                        break
                    except (AssertionError, subprocess.TimeoutExpired):
                        assert time.monotonic() < deadline, daemon.output()[-3000:]
                        time.sleep(0.5)
                while daemon.output().count("turn_done") < i + 1:
                    assert daemon.proc.poll() is None, daemon.output()[-3000:]
                    assert time.monotonic() < deadline, daemon.output()[-3000:]
                    time.sleep(0.05)
                time.sleep(0.6)
        finally:
            assert daemon.terminate() == 0
    samples, _ = card.speaker()
    said = [line for line in daemon.output().splitlines() if "audio_" in line]
    periods = card.prepared_periods(card.speaker_log)
    said.append(f"card xruns (speaker, mic) {card.xruns()}; speaker periods {periods}")
    return samples, "\n".join(said), card, procs is not None


def card_disturbances(card: ClockCard) -> list[int]:
    """Where on the recording (sample index) the card saw the machine miss its clock:
    each speaker xrun, and each stream start after the first (a reopen: the period
    ladder widening after xruns)."""
    t0, marks, starts = None, [], 0
    for line in card.speaker_log.read_text().splitlines() if card.speaker_log.exists() else []:
        words = line.split()
        if len(words) < 3 or not words[1].lstrip("-").isdigit():
            continue
        if words[0] in ("xrun", "start"):
            starts += words[0] == "start"
            if words[0] == "xrun" or starts > 1:
                t0 = int(words[2])
                marks.append((int(words[1]) - t0) * RATE // 10**9)
    return marks


def judge(
    samples: np.ndarray, marks: list[int]
) -> tuple[list[int], dict[int, list[float]], list[int]]:
    """(each reply's length in ms, the holes of each reply judged, the replies not
    judged: a card xrun or a reopen fell within 30 ms of them)."""
    spans = reply_spans(samples)
    near = RATE * 30 // 1000
    lengths = [round((b - a) * 1000 / RATE) for a, b in spans]
    disturbed = [
        i for i, (a, b) in enumerate(spans) if any(a - near <= m <= b + near for m in marks)
    ]
    holes = {i: holes_in(samples, a, b) for i, (a, b) in enumerate(spans) if i not in disturbed}
    return lengths, holes, disturbed


def test_every_reply_plays_without_a_hole_with_a_busy_thread_at_a_pi4_share(
    tmp_path: Path, realtime: RealTime
) -> None:
    """Judged on the replies the card kept in time: a card xrun (or the reopen the
    period ladder makes after several) says the machine missed the clock, not that a
    reply started too early; a run where more than a third of the replies were so
    disturbed proves nothing and is tried again (then skipped for load)."""
    count = int(os.environ.get("HUXLEYD_REPLY_HOLES_N", "8"))
    runs = iter(range(1, 10))

    def attempt() -> tuple[tuple[list[int], dict[int, list[float]], list[int], str], str | None]:
        tmp = tmp_path / f"try{next(runs)}"
        tmp.mkdir()
        try:
            samples, said, card, grouped = run_replies(tmp, count)
        except ClockCardUnavailable as exc:
            pytest.skip(str(exc))
        lengths, holes, disturbed = judge(samples, card_disturbances(card))
        print(
            f"cgroup {'25 %' if grouped else 'none'}; replies {len(lengths)}; "
            f"not judged (card xrun or reopen) {disturbed}; "
            f"holes {[(i, h) for i, h in holes.items() if h]}; lengths {lengths}"
        )
        why = None
        if len(disturbed) * 3 > count:
            why = f"the card xran or reopened during {len(disturbed)} of {count} replies"
        return (lengths, holes, disturbed, said), why

    lengths, holes, disturbed, said = realtime.kept(attempt, tries=2)
    assert len(lengths) == count, (lengths, said)
    assert not any(holes.values()), ([(i, h) for i, h in holes.items() if h], said)
    for i, length in enumerate(lengths):  # each reply whole: its 400 ms, give or take its fades
        assert i in disturbed or REPLY_MS - 15 <= length <= REPLY_MS + 5, lengths
