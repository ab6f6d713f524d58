"""A machine that cannot keep the device's period gets a longer one, once the card
has xrun again and again (:mod:`huxleyd.audio.xrun_watch`); one xrun never does.

The engine is stepped by hand on a fake backend whose card xruns when told (what
the engine does with the count is the question here); the clocked card shows the
real backend's ladder and the reopen a frozen daemon gets (``clockcard``)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import DeviceState
from huxleyd.audio.xrun_watch import NARROW_CALM_S, XRUN_LIMIT
from huxleyd.clock import ManualClock
from tests.fakes.audio_backends import XrunningBackend
from tests.fakes.children import run_json_child
from tests.fakes.clockcard import ClockCard, child_env, stream_changes, write_asoundrc

CHILD = Path(__file__).resolve().parents[1] / "fakes" / "clockcard_child.py"


def engine_on(backend: XrunningBackend, clock: ManualClock) -> AudioEngine:
    return AudioEngine(backend, settings=AudioSettings(backend="wav"), clock=clock)


def xrun_every(
    engine: AudioEngine, backend: XrunningBackend, clock: ManualClock, s: float, n: int
) -> None:
    """``n`` card xruns, one every ``s`` seconds of the engine's clock."""
    for _ in range(n):
        clock.advance(s)
        backend.xruns += 1
        engine.step()


async def test_xruns_again_and_again_widen_the_period_and_say_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    backend = XrunningBackend()
    engine = engine_on(backend, clock)
    engine.on_device_state(lambda state: None)  # binds the loop the reports go to
    engine.run_periods(3)
    with caplog.at_level(logging.WARNING, logger="huxleyd.audio"):
        xrun_every(engine, backend, clock, 0.5, XRUN_LIMIT)
    assert backend.opened == [1, 2]  # reopened at once, not after reopen_interval_s
    assert engine.device_state is DeviceState.OPEN
    assert engine.stats().period_widened == (
        f"widened to x2 after card xruns in {XRUN_LIMIT} periods within 2.0 s"
    )
    assert engine.stats().underruns == 0  # the fake's xruns are not its counters: none lost
    assert any("audio_period_widened" in r.getMessage() for r in caplog.records)
    engine.close()


def test_one_xrun_or_a_slow_trickle_keeps_the_period() -> None:
    """One xrun is one period of silence and never a reopen (the budget), and a card
    that xruns now and then (one every 11 s) is not a machine out of its depth."""
    clock = ManualClock()
    backend = XrunningBackend()
    engine = engine_on(backend, clock)
    engine.run_periods(3)
    xrun_every(engine, backend, clock, 11.0, 3 * XRUN_LIMIT)
    assert backend.opened == [1]
    assert engine.stats().period_widened == ""
    engine.close()


def test_the_ladder_has_a_top_and_the_engine_plays_on_there() -> None:
    clock = ManualClock()
    backend = XrunningBackend(steps=2)
    engine = engine_on(backend, clock)
    engine.run_periods(3)
    for _ in range(4):  # more bursts than the ladder has steps
        xrun_every(engine, backend, clock, 0.1, XRUN_LIMIT)
    assert backend.opened == [1, 2, 4]
    assert engine.device_state is DeviceState.OPEN
    engine.close()


def test_a_calm_stretch_narrows_the_ladder_again_and_counts_each_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After NARROW_CALM_S without a card xrun, and only while nothing plays, the
    period steps back (a widened period made every later barge-in a period slower)."""
    clock = ManualClock()
    backend = XrunningBackend()
    engine = engine_on(backend, clock)
    engine.run_periods(3)
    xrun_every(engine, backend, clock, 0.1, XRUN_LIMIT)
    assert backend.opened == [1, 2]
    clock.advance(NARROW_CALM_S - 1)
    engine.step()
    assert backend.opened == [1, 2]  # not calm long enough
    engine.source("speech").write_nowait(bytes(2) * 24_000)  # a second of (silent) reply
    clock.advance(2)
    engine.step()
    assert backend.opened == [1, 2]  # calm, but a reply plays: its reopen would be heard
    engine.source("speech").flush()
    with caplog.at_level(logging.INFO, logger="huxleyd.audio"):
        for _ in range(5):  # the flush's fade, then idle
            engine.step()
    assert backend.opened == [1, 2, 1]
    assert engine.stats().period_steps == (1, 1)
    assert engine.stats().period_widened == ""
    assert engine.stats().silences.reopens == 0  # nothing was playing
    engine.close()


def test_a_narrowing_the_card_answers_with_xruns_waits_twice_as_long_next_time() -> None:
    clock = ManualClock()
    backend = XrunningBackend()
    engine = engine_on(backend, clock)
    engine.run_periods(3)
    xrun_every(engine, backend, clock, 0.1, XRUN_LIMIT)
    clock.advance(NARROW_CALM_S)
    engine.step()
    assert backend.opened == [1, 2, 1]
    xrun_every(engine, backend, clock, 0.1, XRUN_LIMIT)  # the short period fails again
    assert backend.opened == [1, 2, 1, 2]
    clock.advance(NARROW_CALM_S + 1)
    engine.step()
    assert backend.opened == [1, 2, 1, 2]  # waits 2 x NARROW_CALM_S now
    clock.advance(NARROW_CALM_S)
    engine.step()
    assert backend.opened == [1, 2, 1, 2, 1]
    assert engine.stats().period_steps == (2, 2)
    engine.close()


def test_a_reopen_while_a_reply_plays_is_a_silence_with_its_length() -> None:
    """A ladder step reopens the speaker: 44-105 ms of silence that showed only as a
    state change. Counted now, once, as a reopen, with its length."""
    clock = ManualClock()
    backend = XrunningBackend()
    engine = engine_on(backend, clock)
    engine.run_periods(3)
    backend.on_open = lambda: clock.advance(0.05)  # the reopen takes 50 ms
    engine.source("speech").write_nowait(b"\x00\x10" * 24_000)  # a second of reply
    xrun_every(engine, backend, clock, 0.1, XRUN_LIMIT)
    assert backend.opened == [1, 2]
    silences = engine.stats().silences
    latency_ms = engine.stats().output_latency_ms
    assert silences.reopens == 1
    assert 50.0 <= silences.reopen_ms <= 50.0 + latency_ms + 1.0, (silences, latency_ms)
    assert silences.count == 1 + silences.card_xruns  # one reopen; nothing else late
    engine.close()


# -- the real backend on the clocked card --------------------------------------------


@pytest.mark.clockcard
def test_the_callback_backend_doubles_its_periods_up_to_its_top(card: ClockCard) -> None:
    """What the card was asked for at each open, not what the backend says it asked."""
    result = run_json_child(
        ["-m", "tests.fakes.clockcard_child", "ladder", "callback", "48000"],
        child_env(card.directory),
        timeout_s=120,
    )
    speaker = sorted(set(card.prepared_periods(card.speaker_log)))
    first = speaker[0]
    assert first in (120, 240)  # 2.5 ms at SCHED_FIFO, 5 ms where it is refused
    assert speaker == [first * 2**i for i in range(len(speaker))] and speaker[-1] == 960
    assert sorted(set(card.prepared_periods(card.mic_log))) == [
        480,
        960,
    ]  # up to the engine's 20 ms
    latencies = [o["latency_ms"] for o in result["opens"]]
    assert latencies == sorted(latencies) and latencies[-1] >= 40.0
    assert "widened from" in result["opens"][-1]["description"]
    assert result["widened"].startswith(f"widened from {first / 48:g} ms to 20 ms")


def frozen_again_and_again(
    directory: Path, kind: str, *, stop_s: float = 0.015, every_s: float = 0.15, count: int = 25
) -> tuple[dict[str, Any], ClockCard]:
    """The engine plays (``load``) while it is frozen ``stop_s`` every ``every_s``: a
    machine that cannot run its callbacks that often. The card xruns at each freeze
    its buffer cannot ride out."""
    card = write_asoundrc(directory)
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "load", kind, "48000", "8", "0"],
        env=child_env(directory),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(1000):  # until the speaker has played half a second (the card says)
            time.sleep(0.01)
            starts = [ns for event, ns in card.events(card.speaker_log) if event == "start"]
            if starts and time.monotonic_ns() - starts[0] > 500_000_000:
                break
        for _ in range(count):
            os.kill(child.pid, signal.SIGSTOP)
            time.sleep(stop_s)
            os.kill(child.pid, signal.SIGCONT)
            time.sleep(every_s)
    finally:
        out, _ = child.communicate(timeout=120)
    return json.loads(out.decode().strip().splitlines()[-1]), card


@pytest.mark.clockcard
@pytest.mark.parametrize("kind", ["fed", "callback"])
def test_a_daemon_frozen_again_and_again_gets_a_longer_period(card: ClockCard, kind: str) -> None:
    """Not timed: a 15 ms freeze outlasts a 2.5 ms period's 7.5 ms buffer however idle
    the machine (a loaded one only adds xruns, and so steps); what is judged is that
    the engine widened, that the card was asked for the longer period at a reopen,
    and that it plays on there."""
    stats, card = frozen_again_and_again(card.directory, kind)
    spk = card.prepared_periods(card.speaker_log)
    assert stats["period_widened"].startswith("widened from"), stats
    assert max(spk) > min(spk), spk  # the card itself was asked for a longer period
    assert stats["device_state"] == "open"
    assert spk == sorted(spk) and len(set(spk)) <= 4  # up the ladder, never down


def test_a_widened_period_is_told_apart_from_a_reopen_in_the_cards_log(tmp_path: Path) -> None:
    """The freeze test allows no reopen, and a loaded CI host once failed it on a
    widening (4 ``open`` lines: PortAudio probes the PCM to open one stream). The
    card's log, as the clocked card wrote it that run, then a lost device reopened."""
    card = ClockCard(tmp_path)
    opens = "open 1\nopen 2\nopen 3\nopen 4\n"
    card.speaker_log.write_text(
        opens + "prepare 5 rate=48000 period=120 buffer=360\n"
        "prepare 6 rate=48000 period=120 buffer=360\nstart 7\nxrun 8\nstop 9\n"
        "prepare 10 rate=48000 period=120 buffer=360\nstart 11\nstop 12\n"
        + opens
        + "prepare 13 rate=48000 period=240 buffer=720\nstart 14\nstop 15\n"
        + opens
        + "prepare 16 rate=48000 period=240 buffer=720\nstart 17\nstop 18\n"
    )
    periods = card.stream_periods(card.speaker_log)
    assert periods == [120, 240, 240]
    assert stream_changes(periods) == (1, 1)  # one reopen, one widening
