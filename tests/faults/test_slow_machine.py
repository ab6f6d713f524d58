"""A machine that cannot run the speaker's callback every 2.5 ms (fault row 42).

The image emulated on a PC played the power-cut test's book as silence 89 % of
the time: the card xran several times a second, each recovery took longer than
the period, and doctor said "✓ audio: open". Here the real daemon runs on the
clocked fake card (callback backend, the C feeder), and the test freezes it for
15 ms every 150 ms: what a machine too slow for its period does to the card.
The daemon must widen its period (``audio_period_widened``, and the card asked
for the longer one), keep running, and say so in doctor. Not timed: a 15 ms
freeze outlasts a 2.5 ms period's buffer however idle the host is.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.process import DaemonProcess, ctl, write_daemon_config
from tests.fakes.clockcard import ClockCardUnavailable, build_plugin, write_asoundrc

pytestmark = pytest.mark.clockcard


def test_a_daemon_too_slow_for_its_period_widens_it_and_says_so(tmp_path: Path) -> None:
    try:
        build_plugin()
    except ClockCardUnavailable as exc:
        pytest.skip(str(exc))
    card = write_asoundrc(tmp_path)
    config = write_daemon_config(tmp_path, scenario="")
    text = config.read_text().replace(
        'backend = "wav"\nspeaker_wav = "huxleyd-speaker.wav"',
        'backend = "callback"\ncapture_device = "hux_mic"\nplayback_device = "hux_spk"\n'
        "device_rate_hz = 48000",
    )
    assert 'backend = "callback"' in text
    config.write_text(text)
    daemon = DaemonProcess(config, env={"HOME": str(tmp_path)})
    try:
        daemon.wait_for_log("daemon_started", timeout_s=120)
        for _ in range(40):  # 6 s: several bursts of xruns, the ladder's steps
            os.kill(daemon.proc.pid, signal.SIGSTOP)
            time.sleep(0.015)
            os.kill(daemon.proc.pid, signal.SIGCONT)
            time.sleep(0.15)
            if "audio_period_widened" in daemon.output():
                break
        daemon.wait_for_log("audio_period_widened", timeout_s=30)
        line = next(x for x in daemon.output().splitlines() if "audio_period_widened" in x)
        assert "card xruns in 5 periods within" in line and "widened from" in line, line
        spk = card.prepared_periods(card.speaker_log)
        assert max(spk) > min(spk), spk  # the card was asked for the longer period
        doctor = ctl(daemon.socket, "doctor")
        audio = next(x for x in doctor.splitlines() if " audio:" in x)
        assert audio.lstrip().startswith("!"), audio  # a warning, never a tick
        assert "could not keep its period" in audio or "the card xruns" in audio, audio
    finally:
        assert daemon.terminate() == 0
