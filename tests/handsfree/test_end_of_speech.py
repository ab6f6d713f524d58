"""The end of a wake turn: speech then silence ends it, no speech drops it, and
a long talk is cut at the maximum, against a background level it learns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from huxleyd.handsfree.settings import WakeSettings
from huxleyd.handsfree.vad import (
    NOISE_FOLLOW,
    NOISE_START_DBFS,
    EndOfSpeech,
    Verdict,
    level_dbfs,
)

RATE_HZ = 24_000
FRAME_MS = 20.0
SETTINGS = WakeSettings(model="okay_nabu", end_silence_ms=400, no_speech_s=1.0, max_turn_s=3.0)


def tone(dbfs: float, ms: float = FRAME_MS) -> bytes:
    """A 440 Hz sine whose RMS level is ``dbfs``."""
    n = int(RATE_HZ * ms / 1000)
    amplitude = 32768.0 * 10 ** (dbfs / 20) * math.sqrt(2)
    t = np.arange(n) / RATE_HZ
    return (amplitude * np.sin(2 * math.pi * 440 * t)).astype("<i2").tobytes()


SPEECH = tone(-20.0)
QUIET = tone(-70.0)


def verdicts(vad: EndOfSpeech, frames: list[bytes]) -> list[Verdict]:
    return [vad.frame(pcm, FRAME_MS) for pcm in frames]


def test_level_is_the_rms_in_dbfs() -> None:
    assert level_dbfs(tone(-20.0, 100)) == pytest.approx(-20.0, abs=0.1)
    assert level_dbfs(tone(-3.0, 100)) == pytest.approx(-3.0, abs=0.1)
    assert level_dbfs(b"") == -120.0
    assert level_dbfs(bytes(960)) == -120.0  # digital silence
    assert level_dbfs(SPEECH + b"\x7f") == level_dbfs(SPEECH)  # a half sample is ignored


def test_speech_then_end_silence_ends_the_turn() -> None:
    vad = EndOfSpeech(SETTINGS)
    assert verdicts(vad, [SPEECH] * 10) == [Verdict.GOING_ON] * 10
    quiet = verdicts(vad, [QUIET] * 20)  # 400 ms of silence
    assert quiet == [Verdict.GOING_ON] * 19 + [Verdict.ENDED]
    assert vad.speech_ms == 200.0


def test_a_word_in_the_silence_restarts_the_count() -> None:
    vad = EndOfSpeech(SETTINGS)
    got = verdicts(vad, [SPEECH] * 5 + [QUIET] * 19 + [SPEECH] + [QUIET] * 19)
    assert Verdict.ENDED not in got
    assert vad.frame(QUIET, FRAME_MS) is Verdict.ENDED


def test_no_speech_drops_the_turn_at_no_speech_s() -> None:
    vad = EndOfSpeech(SETTINGS)
    got = verdicts(vad, [QUIET] * 50)  # one second
    assert got == [Verdict.GOING_ON] * 49 + [Verdict.NOTHING_SAID]


def test_talking_on_is_cut_at_max_turn_s() -> None:
    vad = EndOfSpeech(SETTINGS)
    got = verdicts(vad, [SPEECH] * 150)  # three seconds
    assert got == [Verdict.GOING_ON] * 149 + [Verdict.ENDED]


def test_the_background_follows_quiet_frames_and_raises_the_bar() -> None:
    vad = EndOfSpeech(SETTINGS)
    hum = tone(-40.0)
    assert vad.frame(hum, FRAME_MS) is Verdict.GOING_ON and vad.speech_ms == FRAME_MS
    # A detector that learned a -38 dBFS room (carried from the last turn)
    # hears the same hum as background, moving toward it by NOISE_FOLLOW a frame.
    learned = EndOfSpeech(SETTINGS, noise_dbfs=-38.0)
    learned.frame(hum, FRAME_MS)
    assert learned.speech_ms == 0.0
    assert learned.noise_dbfs == pytest.approx(-38.0 + NOISE_FOLLOW * (level_dbfs(hum) + 38.0))
    fresh = EndOfSpeech(SETTINGS)
    fresh.frame(QUIET, FRAME_MS)
    assert NOISE_START_DBFS - 1 < fresh.noise_dbfs < NOISE_START_DBFS  # toward -70, slowly


def test_speech_below_the_absolute_floor_never_counts() -> None:
    vad = EndOfSpeech(SETTINGS, noise_dbfs=-100.0)
    verdicts(vad, [tone(-55.0)] * 10)  # far above the background, below -50 dBFS
    assert vad.speech_ms == 0.0
