"""The real daemon answering reply after reply on the clocked card, with a busy Python
thread in it, at a Pi 4's CPU share: what ``tests/audio/test_reply_holes.py`` judges
and ``bench/bench_replies.py`` measures (issue 39).

Each reply is one 440 Hz tone (the simulator's ``tone_hz``), no earcons: on the
card's recording a reply is a run of loud samples, and inside it any quiet run
longer than 1 ms is a hole the listener heard. Replies near a card xrun or a reopen
are not judged: there the machine, not the reply's start, missed the clock.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.e2e.process import DaemonProcess, ctl, write_daemon_config
from tests.fakes.clockcard import ClockCard, build_plugin, write_asoundrc
from tests.fakes.cpu_share import PI4_PERIOD_US, PI4_SHARE, NoCgroup, cpu_group
from tests.fakes.witness import Witness

RATE = 48_000
REPLY_MS = 400
PLAYS_ON_NS = 40_000_000
"""How long the speaker plays on from what was queued (the feeder's 30 ms lead and the
card's buffer): a machine stall that began that long before a hole made it."""
BUSY_SITE = Path(__file__).resolve().parent / "busy_site"
BETWEEN_MS = 250
"""Quiet longer than this separates two replies on the recording (the run waits
600 ms between them); shorter quiet inside a reply is a hole."""


@dataclass(frozen=True, slots=True)
class ReplyRun:
    samples: np.ndarray
    """The speaker's recording (48 kHz)."""
    said: str
    """The daemon's audio log lines and the card's xruns and periods (for a failure)."""
    card: ClockCard
    grouped: bool
    """The daemon ran in a CPU cgroup at a Pi 4's share (False: no cgroup here)."""
    silences: dict[str, Any]
    """``huxleyctl status``'s silences by cause, at the end of the run."""
    stalls: list[tuple[int, int]]
    """When the machine itself stalled (:mod:`tests.fakes.witness`: monotonic ns spans)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    lengths: list[int]
    """Each reply's length on the recording, ms."""
    holes: dict[int, list[float]]
    """The holes (ms) of each reply judged."""
    disturbed: list[int]
    """Replies not judged: a card xrun or a reopen fell within 30 ms of them."""

    @property
    def with_holes(self) -> list[tuple[int, list[float]]]:
        return [(i, h) for i, h in self.holes.items() if h]


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


def hole_spans(
    samples: np.ndarray, start: int, end: int, *, threshold: int = 160
) -> list[tuple[int, int]]:
    """Quiet runs longer than 1 ms inside [start, end): (first quiet index, samples) (a
    440 Hz tone at -10 dBFS is below the threshold for one sample at a zero crossing)."""
    loud = np.flatnonzero(np.abs(samples[start:end].astype(np.int32)) >= threshold)
    gaps = np.diff(loud) - 1
    return [(start + int(loud[i]) + 1, int(g)) for i, g in enumerate(gaps) if g > RATE // 1000]


def holes_in(samples: np.ndarray, start: int, end: int, *, threshold: int = 160) -> list[float]:
    """The lengths (ms) of :func:`hole_spans`."""
    return [n * 1000 / RATE for _, n in hole_spans(samples, start, end, threshold=threshold)]


@contextlib.contextmanager
def pi4_share() -> Iterator[Path | None]:
    try:
        with cpu_group(PI4_SHARE, PI4_PERIOD_US) as procs:
            yield procs
    except NoCgroup:
        yield None


def card_config(tmp: Path, scenario: str) -> tuple[ClockCard, Path]:
    """The clocked card as the default ALSA device of ``tmp`` and a daemon config on it
    (the callback backend, the C feeder, the sim provider at real-time pace, no
    earcons: the recording holds the replies alone)."""
    build_plugin()
    card = write_asoundrc(tmp)
    sounds = tmp / "sounds"
    sounds.mkdir()
    config = write_daemon_config(tmp, scenario=scenario, sounds_dir=sounds, sim_speed=1.0)
    text = config.read_text().replace(
        'backend = "wav"\nspeaker_wav = "huxleyd-speaker.wav"',
        'backend = "callback"\ncapture_device = "hux_mic"\nplayback_device = "hux_spk"\n'
        "device_rate_hz = 48000",
    )
    config.write_text(text)
    return card, config


def run_replies(tmp: Path, count: int) -> ReplyRun:
    """``count`` replies of the real daemon (sim provider, the clocked card, a busy
    Python thread in it) at a Pi 4's CPU share where a cgroup can be had."""
    card, config = card_config(tmp, replies_scenario(count))
    env = {
        "HOME": str(tmp),
        "HUXLEYD_TEST_BUSY_THREAD": "1",
        "PYTHONPATH": os.pathsep.join([str(BUSY_SITE), os.environ.get("PYTHONPATH", "")]),
    }
    with pi4_share() as procs, Witness() as witness:
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
            status = json.loads(ctl(daemon.socket, "status", "--json", exit_codes=(0,)))
        finally:
            assert daemon.terminate() == 0
    samples, _ = card.speaker()
    said = [line for line in daemon.output().splitlines() if "audio_" in line]
    periods = card.prepared_periods(card.speaker_log)
    said.append(f"card xruns (speaker, mic) {card.xruns()}; speaker periods {periods}")
    silences = dict(status.get("xruns", {}).get("silences", {}))
    return ReplyRun(
        samples, "\n".join(said), card, procs is not None, silences, list(witness.stalls)
    )


def card_disturbances(card: ClockCard) -> list[int]:
    """Where on the recording (sample index) the card saw the machine miss its clock:
    each speaker xrun, and each stream opened after one had started (a reopen: the
    period ladder widening after xruns)."""
    events = card.events(card.speaker_log)
    t0 = next((ns for event, ns in events if event == "t0"), None)
    if t0 is None:
        return []
    marks: list[int] = []
    started = False
    for event, ns in events:
        started = started or event == "start"
        if event == "xrun" or (event == "open" and started):
            marks.append((ns - t0) * RATE // 10**9)
    return marks


def judge(
    samples: np.ndarray,
    marks: list[int],
    stalls: Sequence[tuple[int, int]] = (),
    t0: int = 0,
) -> Verdict:
    """The replies on the recording, judged where the machine kept its clock: a reply
    near a card xrun or a reopen (``marks``, sample indexes) is not judged, nor one
    whose hole fell while the machine itself stalled (``stalls``, monotonic ns; ``t0``
    the recording's sample 0: a stall up to :data:`PLAYS_ON_NS` before a hole made it,
    the speaker playing on from what was queued)."""
    spans = reply_spans(samples)
    near = RATE * 30 // 1000
    lengths = [round((b - a) * 1000 / RATE) for a, b in spans]
    disturbed = [
        i for i, (a, b) in enumerate(spans) if any(a - near <= m <= b + near for m in marks)
    ]
    holes: dict[int, list[float]] = {}
    for i, (a, b) in enumerate(spans):
        if i in disturbed:
            continue
        found = hole_spans(samples, a, b)
        at_ns = [(t0 + at * 10**9 // RATE, t0 + (at + n) * 10**9 // RATE) for at, n in found]
        if any(s <= end and e >= start - PLAYS_ON_NS for start, end in at_ns for s, e in stalls):
            disturbed.append(i)
            continue
        holes[i] = [n * 1000 / RATE for _, n in found]
    return Verdict(lengths, holes, sorted(disturbed))
