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

False accepts: :func:`tests.fakes.wake_audio.distinct_hour`, sixty minutes
none of which repeats (espeak-ng speech in 36 voices at 120-230 words per
minute with near misses, music, the device's replies through rooms of 5-50
ms and -20..0 dB), through the detector at the provider's 24 kHz, as fast as
it goes.

End of the wake word → detection (audio time, mean and worst over the 21
phrases in silence, offline).

On the clocked fake card (``hw/clockcard``; skipped where it cannot be built),
whose capture hears its own playback through a room:

- the echo canceller as the daemon runs it (``tests/fakes/echo_child.py``:
  the engine on the C callback backend, the wake thread's path): ERLE over
  the last 6 s of 12 s of the device's speech over music, and the first
  seconds whose ERLE reaches 20 and 25 dB, for nine rooms (5, 20, 50 ms;
  -20, -10, 0 dB);
- voice barge-in end to end (``tests/fakes/voice_bargein.py``: the real
  daemon, the simulator's reply, "okay nabu" into the mic 5 s into it): from
  the end of the wake phrase in the mic signal to the first silent sample of
  the card's speaker recording; runs where the card saw an xrun, or the reply
  reached the speaker with a gap before the cut, are not counted (the machine
  did not keep time), and the row says how many were kept.

CPU: process time per second of audio. Pi figures scale as the rest of the
bench does (docs/conventions.md: a Pi 4 core runs Python 3.5-4x slower than
this machine, a Zero 2 W about 3x slower again): x4 and x12. The model and
Speex are C, so that scaling is a rough guide, not a measurement on a Pi.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from bench import Row
from huxleyd.audio import echo
from huxleyd.handsfree.detector import MicroWakeDetector
from tests.audio.test_echo_card import erle_windows_db
from tests.fakes.children import run_json_child
from tests.fakes.clockcard import ClockCardUnavailable, build_plugin, child_env, write_asoundrc
from tests.fakes.voice_bargein import voice_cut
from tests.fakes.wake_audio import (
    CHATTER,
    SPEEDS,
    VOICES,
    distinct_hour,
    espeak,
    mix,
    music,
    noise,
    room,
    room_taps,
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


AHEAD = 2
"""Speaker periods handed to the canceller before the mic frame captured with the
first of them, as in the daemon (the engine mixes 30 ms ahead of the DAC, a mic
frame is handed on once whole): the canceller reads the far end ahead of a
frame's capture stamp (``echo.LOOKAHEAD_MS``)."""


def _cancelled(mic: np.ndarray, far_audio: np.ndarray) -> np.ndarray:
    far = echo.FarEnd(RATE)
    aec = echo.EchoCanceller(far, suppress=False)
    out = np.zeros(len(mic), dtype=np.int16)
    written = 0
    for start in range(0, len(mic) - STEP + 1, STEP):
        while written <= min(start + AHEAD * STEP, len(far_audio) - STEP):
            part = far_audio[written : written + STEP]
            far.played(part.tobytes(), 100.0 + written / RATE)
            written += STEP
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
                "end of the wake word → detection, offline (mean; worst in reference)",
                float(np.mean(latencies)),
                "ms",
                float(np.max(latencies)),
                "ms worst",
            )
        )
    return rows


def _false_accept_row() -> Row:
    audio = distinct_hour()
    detector = MicroWakeDetector("okay_nabu", 24_000)
    started = time.process_time()
    hits = _feed(detector, audio, 24_000)
    cpu = time.process_time() - started
    seconds = len(audio) / 24_000
    return Row(
        AREA,
        f"false accepts per hour ({seconds / 60:.0f} distinct min of non-wake audio; "
        f"{len(hits)} accepts; CPU {cpu:.1f} s)",
        len(hits) * 3600 / seconds,
        "/h",
        budget="0",
    )


ROOMS = tuple((delay, gain) for delay in (5, 20, 50) for gain in (-20, -10, 0))
"""(delay ms, speaker-to-mic gain dB) of the card's room for the ERLE rows: the
issue's ranges, both ends and the middle."""
CARD_RATE = 48_000


def _card_erle_rows() -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for delay_ms, gain_db in ROOMS:
            for _ in range(3):  # a run where the card saw an xrun is not kept
                card = write_asoundrc(
                    Path(tmp),
                    mic_pcm=noise(12.0, CARD_RATE, level_dbfs=-75).tobytes(),
                    room=room_taps(rate_hz=CARD_RATE, delay_ms=delay_ms, gain_db=gain_db),
                )
                result = run_json_child(
                    ["-m", "tests.fakes.echo_child", "erle", "12"],
                    child_env(Path(tmp)),
                    timeout_s=180,
                )
                if card.xruns() == (0, 0) and not result["speaker_dropouts"]:
                    break
            else:
                rows.append(
                    Row(
                        AREA,
                        f"card ERLE, room {delay_ms} ms {gain_db} dB: no run kept time",
                        float("nan"),
                        "",
                    )
                )
                continue
            p = np.array(result["powers"])
            late = p[len(p) // 2 :]
            erle = float(10 * np.log10(late[:, 0].sum() / max(late[:, 1].sum(), 1.0)))
            windows = erle_windows_db(result["powers"])
            reached = [
                next((f"{i + 1}" for i, w in enumerate(windows) if w >= goal), "never in")
                for goal in (20.0, 25.0)
            ]
            rows.append(
                Row(
                    AREA,
                    f"echo canceller on the clocked card, room {delay_ms} ms {gain_db} dB: "
                    f"ERLE over the last 6 s of 12 (20 / 25 dB first reached after "
                    f"{reached[0]} / {reached[1]} s; per second "
                    f"{' '.join(f'{w:.0f}' for w in windows)})",
                    erle,
                    "dB",
                    budget="goal ≥ 25 dB",
                )
            )
    return rows


VOICE_RUNS = 5


def _voice_bargein_row() -> Row:
    latencies: list[float] = []
    runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        while len(latencies) < VOICE_RUNS and runs < VOICE_RUNS * 2:
            runs += 1
            directory = Path(tmp) / f"run{runs}"
            directory.mkdir()
            cut = voice_cut(directory)
            if cut.kept and cut.barged and cut.latency_ms is not None:
                latencies.append(cut.latency_ms)
    if not latencies:
        return Row(AREA, f"voice barge-in: no run of {runs} kept", float("nan"), "")
    return Row(
        AREA,
        "voice barge-in on the clocked card, real daemon: end of the wake phrase in the "
        f"mic → speaker silent (mean; worst in reference; {len(latencies)} runs kept of "
        f"{runs}: {' '.join(f'{x:.0f}' for x in latencies)} ms)",
        float(np.mean(latencies)),
        "ms",
        float(np.max(latencies)),
        "ms worst",
    )


def _card_rows() -> list[Row]:
    try:
        build_plugin()
    except ClockCardUnavailable as exc:
        return [Row(AREA, f"clocked card rows skipped: {exc}", float("nan"), "")]
    rows = _card_erle_rows() if echo.AVAILABLE else []
    return [*rows, _voice_bargein_row()]


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
    return [*_detection_rows(), _false_accept_row(), *_cpu_rows(), *_card_rows()]
