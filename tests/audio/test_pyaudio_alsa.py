"""The PyAudio backend for real: PortAudio → ALSA → the ``file`` plugin, no sound card."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.audio.signals import dominant_frequency, level_at, tone_samples, windows
from tests.fakes.audio_alsa import RATE_HZ, run_child, write_asoundrc

pytestmark = pytest.mark.alsa


def test_a_sine_goes_through_portaudio_and_alsa_and_comes_back(tmp_path: Path) -> None:
    """Stereo capture, channel 1 carries 440 Hz at -12 dBFS, channel 0 a 1 kHz decoy;
    the engine picks channel 1, resamples 48 → 24 kHz, asyncio loops it to the
    comms source, the engine resamples 24 → 48 kHz and writes the output file."""
    seconds = 3.0
    wanted = tone_samples(440, seconds, -12, rate_hz=RATE_HZ)
    decoy = tone_samples(1000, seconds, -6, rate_hz=RATE_HZ)
    stereo = np.stack([decoy, wanted], axis=1).astype("<i2")
    infile, outfile = tmp_path / "in.raw", tmp_path / "out.raw"
    infile.write_bytes(stereo.tobytes())
    write_asoundrc(tmp_path, infile=infile, outfile=outfile)

    result = run_child(tmp_path, "loopback", str(tmp_path), "2.0", "8.0", "1", "2")

    assert result["device_state"] == "open"
    assert result["input_rate_hz"] == result["output_rate_hz"] == RATE_HZ
    assert "hux_in" in result["description"] and "hux_out" in result["description"]
    assert result["output_latency_s"] > 0  # PortAudio's figure, used by the playout clock
    assert result["played_ms"] == 2200  # 2 s plus the 200 ms of lead
    assert result["input_peak_dbfs"] == pytest.approx(-12, abs=0.5)  # channel 1, not the decoy
    out = np.frombuffer(outfile.read_bytes(), dtype="<i2")
    start = int(np.flatnonzero(np.abs(out) > 100)[0])
    body = out[start + 4800 : start + 4800 + RATE_HZ]  # one second from the middle
    assert dominant_frequency(body, RATE_HZ) == pytest.approx(440, abs=0.5)
    # per 50 ms window (whole cycles of both tones); the median shrugs off a window
    # where a busy machine starved the child's asyncio loop (counted in source_gaps)
    assert np.median([level_at(w, 440, RATE_HZ) for w in windows(body, 2400)]) == pytest.approx(
        -12, abs=0.2
    )
    assert (
        max(level_at(w, 1000, RATE_HZ) for w in windows(body, 2400)) < -60
    )  # channel 0 stayed out


def click_onsets(out: np.ndarray) -> list[int]:
    loud = out > 10000
    return [int(i) + 1 for i in np.flatnonzero(~loud[:-1] & loud[1:])]


def test_latency_is_reported_in_periods(tmp_path: Path) -> None:
    infile, outfile = tmp_path / "in.raw", tmp_path / "out.raw"
    infile.write_bytes(bytes(RATE_HZ * 2 * 4))
    write_asoundrc(tmp_path, infile=infile, outfile=outfile)
    result = run_child(
        tmp_path, "latency", str(tmp_path), "1.0", "3"
    )  # real time: polling stays exact
    onsets = click_onsets(np.frombuffer(outfile.read_bytes(), dtype="<i2"))
    assert len(onsets) == 3
    latency_periods = result["latency_samples"] / 480
    for onset, queued, heard in zip(
        onsets, result["queued_periods"], result["heard_periods"], strict=True
    ):
        # the file starts with the silence the backend primes the device with
        wrote_at = onset // 960 - result["prefill_periods"]
        assert queued <= wrote_at <= queued + 2
        lag = heard - (wrote_at + 1)  # periods after the one that wrote it
        # the playout clock waits out the latency PortAudio reports before calling it heard
        assert math.floor(latency_periods) <= lag <= math.ceil(latency_periods) + 2
