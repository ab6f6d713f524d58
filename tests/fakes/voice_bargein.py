"""Voice barge-in end to end: the real daemon on the clocked fake card, cut by "okay nabu".

The daemon runs as a process (``python -m huxleyd``) with the C callback
backend on the clocked card, the simulator as its provider and the wake word
on. The card's mic hears the room (:func:`tests.fakes.wake_audio.room_taps`:
20 ms, -10 dB) of what its speaker really plays, plus whatever this module
writes into the mic's file ahead of the card's read position: the user
speaking, at a moment chosen while the daemon runs. So:

1. the user says "okay nabu" and a question (a steady tone); the wake turn
   starts, the end-of-speech detector commits it, and the simulator answers
   with a long reply (a steady 300 Hz tone: its end on the recording is one
   clear edge, where speech has pauses of its own);
2. a few seconds into the reply, once the canceller has heard it, the user
   says "okay nabu" again, into the echo of the reply;
3. the measure: from the end of that wake phrase in the mic signal (its last
   loud sample, placed in time by the card's capture log) to the first sample
   from which the card's speaker recording stays silent (10 ms). Both are on
   the card's clock (``CLOCK_MONOTONIC``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.e2e.process import DaemonProcess, write_daemon_config
from tests.fakes.clockcard import ClockCard, longest_gap, silent_from, write_asoundrc
from tests.fakes.wake_audio import espeak, noise, room_taps

RATE = 48_000
REPLY_MS = 12_000
SCENARIO = f"""name = "voice barge-in"
[[turns]]
hear = "question"
[[turns.responses]]
say = "a long answer"
tone_hz = 300.0
duration_ms = {REPLY_MS}
[[turns]]
hear = "stop"
[[turns.responses]]
say = "ok"
"""
MIC_S = 120
"""The mic file's length: the card loops it, and one run must not reach its end."""


@dataclass(frozen=True, slots=True)
class VoiceCut:
    """One voice barge-in, on the card's clock."""

    wake_end_s: float
    """When the second wake phrase's last loud sample was captured."""
    silent_s: float | None
    """When the speaker went silent after it (None: it never did)."""
    reply_start_s: float
    """When the reply began playing (the recording's first second of steady tone)."""
    barged: bool
    """The daemon logged a barge-in."""
    log: str
    kept: bool
    """The machine kept time: no xrun at the card, and the reply's tone reached the
    speaker without a gap until the cut (a gap is the speaker fed silence: read
    as a cut, it would measure a barge-in shorter than the detection itself;
    measured once at 10 ms on a loaded host)."""

    @property
    def latency_ms(self) -> float | None:
        return None if self.silent_s is None else (self.silent_s - self.wake_end_s) * 1000


def _config(directory: Path) -> Path:
    config = write_daemon_config(directory, scenario=SCENARIO, sim_speed=1.0)
    text = config.read_text().replace(
        'backend = "wav"\nspeaker_wav = "huxleyd-speaker.wav"',
        'backend = "callback"\ncapture_device = "hux_mic"\nplayback_device = "hux_spk"\n'
        f"device_rate_hz = {RATE}",
    )
    config.write_text(text + '\n[wake]\nmodel = "okay_nabu"\nend_silence_ms = 500\n')
    return config


def _say(card: ClockCard, pcm: np.ndarray, *, lead_s: float) -> float:
    """Write ``pcm`` into the mic file ``lead_s`` ahead of the card's read position;
    return when (card clock, s) its last loud sample will be captured."""
    ns, first = card.mic_starts()[-1]
    at = first + int((time.monotonic_ns() - ns) * RATE // 10**9) + int(lead_s * RATE)
    with card.mic_file.open("r+b") as mic:
        mic.seek(at * 2)
        mic.write(pcm.astype("<i2").tobytes())
    end = at + int(np.flatnonzero(np.abs(pcm) > 300)[-1])
    return (ns + (end - first) * 10**9 / RATE) / 1e9


def _wait(what: str, until: float, check: object) -> None:
    while not check():  # type: ignore[operator]
        if time.monotonic() > until:
            raise TimeoutError(what)
        time.sleep(0.05)


def _steady_since(card: ClockCard, seconds: float) -> float | None:
    """When the speaker recording's latest ``seconds`` of uninterrupted sound began."""
    if not card.recording.exists() or card.recording.stat().st_size == 0:
        return None
    heard, t0 = card.speaker()
    tail = np.abs(heard[-int(seconds * RATE) :].astype(np.int32))
    if len(tail) < seconds * RATE or tail.reshape(-1, RATE // 100).max(axis=1).min() < 160:
        return None
    return (t0 + (len(heard) - len(tail)) * 10**9 / RATE) / 1e9


def voice_cut(directory: Path, *, into_reply_s: float = 5.0) -> VoiceCut:
    """One run: the daemon answers, "okay nabu" ``into_reply_s`` into the reply."""
    card = write_asoundrc(
        directory,
        mic_pcm=noise(MIC_S, RATE, level_dbfs=-75).tobytes(),
        room=room_taps(rate_hz=RATE, delay_ms=20, gain_db=-10),
    )
    wake = (espeak("okay nabu", "en-us", 175, RATE) * 0.5).astype(np.int16)
    t = np.arange(int(1.5 * RATE)) / RATE
    question = np.concatenate([wake, np.zeros(int(0.3 * RATE)), np.sin(2 * np.pi * 300 * t) * 6000])
    daemon = DaemonProcess(_config(directory), env={"HOME": str(directory)})
    try:
        daemon.wait_for_log("wake_word_armed", timeout_s=60)
        _wait("the mic started", time.monotonic() + 30, card.mic_starts)
        time.sleep(1.0)  # the detector loaded and listening
        _say(card, question, lead_s=0.3)
        steady = _wait_reply(card)
        time.sleep(max(0.0, steady + into_reply_s - time.monotonic()))
        wake_end = _say(card, wake, lead_s=0.2)
        deadline = time.monotonic() + 10
        while "barge_in" not in daemon.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        daemon.terminate()
    heard, t0 = card.speaker()
    at = max(0, int((wake_end * 1e9 - t0) * RATE // 10**9))
    silent = silent_from(heard, _tone_end(heard, at), rate_hz=RATE)
    silent_s = None if silent >= len(heard) else (t0 + silent * 10**9 / RATE) / 1e9
    start = int((steady * 1e9 - t0) * RATE // 10**9)
    gap_free = longest_gap(heard, start, min(silent, len(heard))) <= RATE // 2000
    log = daemon.output()
    return VoiceCut(
        wake_end, silent_s, steady, "barge_in" in log, log, gap_free and card.xruns() == (0, 0)
    )


def _tone_end(heard: np.ndarray, at: int) -> int:
    """The start of the last 5 ms block after ``at`` in which the reply's 300 Hz tone
    still plays (the listen earcon that follows a cut has no such tone)."""
    block = RATE // 200
    t = np.arange(block) / RATE
    probe = np.exp(-2j * np.pi * 300 * t)
    piece = heard[at : at + 3 * RATE].astype(np.float64)
    blocks = piece[: len(piece) // block * block].reshape(-1, block)
    level = np.abs(blocks @ probe) / block
    if len(level) == 0 or level[0] == 0:
        return at
    playing = np.flatnonzero(level > 0.3 * level[0])
    return at + int(playing[-1]) * block if len(playing) else at


def _wait_reply(card: ClockCard) -> float:
    found: list[float] = []

    def started() -> bool:
        since = _steady_since(card, 1.0)
        if since is not None:
            found.append(since)
        return since is not None

    _wait("the reply played", time.monotonic() + 30, started)
    return found[0]
