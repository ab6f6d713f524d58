"""The sim's speech: espeak-ng at 24 kHz when installed, word tones otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from huxleyd.pcm import BYTES_PER_MS
from huxleyd.sim.speech import espeak_available, synthesize, tone, tone_speech


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2")


def test_a_tone_has_its_length_its_pitch_and_no_clicks() -> None:
    pcm = tone(440.0, 500)
    assert len(pcm) == 500 * BYTES_PER_MS
    x = samples(pcm).astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x))
    peak_hz = np.argmax(spectrum) * 24_000 / len(x)
    assert abs(peak_hz - 440.0) < 5.0
    assert abs(x[0]) < 100 and abs(x[-1]) < 100  # faded in and out


def test_word_tones_last_200_ms_per_word() -> None:
    assert len(tone_speech("one two three")) == 3 * 200 * BYTES_PER_MS
    assert synthesize("one two three", "tone") == tone_speech("one two three")


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")
def test_espeak_speech_is_24_khz_pcm_of_a_plausible_length() -> None:
    short = synthesize("Yes.", "espeak")
    long = synthesize("It is ten past three in the afternoon, and the kettle is on.", "espeak")
    assert len(short) % 2 == 0
    assert 0.2 < len(short) / BYTES_PER_MS / 1000 < 2.0
    assert len(long) > 3 * len(short)
    x = samples(long)
    assert np.abs(x).max() > 5000  # speech, not silence
