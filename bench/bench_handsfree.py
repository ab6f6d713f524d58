"""Hands-free: the wake word and the echo canceller, offline on generated audio.

Detection rate: espeak-ng saying "okay nabu" in seven voices at three speeds
(21 phrases), each between silences, fed to the detector as the daemon feeds
it (20 ms frames). In silence; and while the device plays its own speech
over music, heard through the synthetic room (20 ms, a 60 ms decaying
response, speaker-to-mic -10 dB, a saturating speaker, -75 dBFS noise),
without and with the echo canceller (the far end aligned by DAC time, as
:mod:`huxleyd.audio.echo` does it). The user's voice reaches the mic at
espeak's level halved (-6 dB); the device plays at a speech level of about
-20 dBFS RMS, its default volume's share of full scale.

False accepts: the hour of :func:`tests.fakes.wake_audio.hour` (espeak-ng
chatter in seven voices at three speeds, music, noise, the device's replies
through a room), through the detector at the provider's 24 kHz.

Barge-in by voice, from the end of the wake word to the detection (audio
time, mean and worst over the 21 phrases); the cut after it is the press's
own path, measured by ``bench_realtime``'s barge-in rows (speaker silent
≤ 15 ms after the press): the two add up to "end of the wake word → silence".

CPU: process time per second of audio. Pi figures scale as the rest of the
bench does (docs/conventions.md: a Pi 4 core runs Python 3.5-4x slower than
this machine, a Zero 2 W about 3x slower again): x4 and x12. The model and
Speex are C, so that scaling is a rough guide, not a measurement on a Pi.
"""

from __future__ import annotations

import time

import numpy as np

from bench import Row
from huxleyd.audio import echo
from huxleyd.handsfree.detector import MicroWakeDetector
from tests.fakes.wake_audio import (
    CHATTER,
    SPEEDS,
    VOICES,
    corpus,
    espeak,
    hour,
    mix,
    music,
    noise,
    room,
    silence,
)

AREA = "hands-free"
RATE = 16_000
STEP = RATE // 50
PI4, ZERO2W = 4.0, 12.0


def _feed(detector: MicroWakeDetector, pcm: np.ndarray, rate: int) -> list[int]:
    """The sample indices (end of the frame) at which the detector fired."""
    step = rate // 50
    data = pcm.astype("<i2").tobytes()
    return [
        i // 2 + step
        for i in range(0, len(data), step * 2)
        if detector.feed(data[i : i + step * 2])
    ]


def _phrases() -> list[np.ndarray]:
    return [
        (espeak("okay nabu", v, s, RATE) * 0.5).astype(np.int16) for v in VOICES for s in SPEEDS
    ]


def _device_audio(seconds: float) -> np.ndarray:
    speech = np.concatenate([espeak(t, "en-gb-x-rp", 175, RATE) for t in CHATTER])
    speech = np.resize(speech, int(seconds * RATE))
    return mix(speech * 0.5, music(seconds, RATE, seed=5) * 0.5)


def _cancelled(mic: np.ndarray, far_audio: np.ndarray) -> np.ndarray:
    far = echo.FarEnd(RATE)
    aec = echo.EchoCanceller(far, suppress=False)
    out = np.zeros(len(mic), dtype=np.int16)
    for start in range(0, len(mic) - STEP + 1, STEP):
        far.played(far_audio[start : start + STEP].tobytes(), 100.0 + start / RATE)
        out[start : start + STEP] = np.frombuffer(
            aec.process(mic[start : start + STEP].tobytes(), 100.0 + start / RATE), np.int16
        )
    return out


def _detection_rows() -> list[Row]:
    phrases = _phrases()
    lead = 4 * RATE  # the canceller converges on the device's sound first
    results: dict[str, int] = {"silence": 0, "playback, no AEC": 0, "playback, AEC": 0}
    latencies: list[float] = []
    for phrase in phrases:
        near = np.concatenate([silence(lead / RATE, RATE), phrase, silence(1.5, RATE)])
        end = lead + int(np.flatnonzero(np.abs(phrase) > 300)[-1])
        hits = _feed(MicroWakeDetector("okay_nabu", RATE), near, RATE)
        results["silence"] += bool(hits)
        if hits:
            latencies.append((hits[0] - end) / RATE * 1000)
        device = _device_audio(len(near) / RATE)
        saturated = np.tanh(device.astype(np.float64) / 32768 * 1.5) / 1.5 * 32768
        heard = room(saturated, rate_hz=RATE, delay_ms=20, gain_db=-10)
        mic = mix(near, heard, noise(len(near) / RATE, RATE, level_dbfs=-75))
        results["playback, no AEC"] += bool(_feed(MicroWakeDetector("okay_nabu", RATE), mic, RATE))
        if echo.AVAILABLE:
            clean = _cancelled(mic, device)
            results["playback, AEC"] += bool(
                _feed(MicroWakeDetector("okay_nabu", RATE), clean, RATE)
            )
    rows = [
        Row(
            AREA,
            f"wake word detected, {name} ({len(phrases)} phrases)",
            100 * n / len(phrases),
            "%",
        )
        for name, n in results.items()
        if name != "playback, AEC" or echo.AVAILABLE
    ]
    if latencies:
        rows.append(
            Row(
                AREA,
                "end of the wake word → detection (mean; worst in reference)",
                float(np.mean(latencies)),
                "ms",
                float(np.max(latencies)),
                "ms worst",
                "+ the press's cut (≤ 15 ms) = voice barge-in to silence",
            )
        )
    return rows


def _false_accept_row() -> Row:
    audio = hour(corpus())
    detector = MicroWakeDetector("okay_nabu", 24_000)
    started = time.process_time()
    hits = _feed(detector, audio, 24_000)
    cpu = time.process_time() - started
    seconds = len(audio) / 24_000
    return Row(
        AREA,
        f"false accepts per hour (non-wake audio, {seconds / 60:.0f} min; CPU {cpu:.1f} s)",
        len(hits) * 3600 / seconds,
        "/h",
        budget="0",
    )


def _cpu_rows() -> list[Row]:
    audio = _device_audio(30.0)
    detector = MicroWakeDetector("okay_nabu", 24_000)
    at24k = np.resize(audio, 30 * 24_000)
    started = time.process_time()
    _feed(detector, at24k, 24_000)
    wake = (time.process_time() - started) / 30.0 * 100
    rows = [_cpu_row("wake word (24 kHz in, resampled, model)", wake)]
    if echo.AVAILABLE:
        mic = mix(room(audio.astype(np.float64), rate_hz=RATE), noise(30.0, RATE, level_dbfs=-75))
        for suppress in (False, True):
            far = echo.FarEnd(RATE)
            aec = echo.EchoCanceller(far, suppress=suppress)
            started = time.process_time()
            for start in range(0, len(mic) - STEP + 1, STEP):
                far.played(audio[start : start + STEP].tobytes(), start / RATE)
                aec.process(mic[start : start + STEP].tobytes(), start / RATE)
            share = (time.process_time() - started) / 30.0 * 100
            label = "echo canceller, 16 kHz" + (" + residual suppressor" if suppress else "")
            rows.append(_cpu_row(label, share))
    else:
        rows.append(Row(AREA, "echo canceller (not built: libspeexdsp-dev)", float("nan"), ""))
    return rows


def _cpu_row(what: str, percent: float) -> Row:
    return Row(
        AREA,
        f"CPU per second of audio: {what}",
        percent,
        "% of a core",
        budget=f"Pi 4 ≈ {percent * PI4:.2g} %, Zero 2 W ≈ {percent * ZERO2W:.2g} % of a core",
    )


def run() -> list[Row]:
    return [*_detection_rows(), _false_accept_row(), *_cpu_rows()]
