"""The microWakeWord detector on espeak-ng speech, fed as the daemon feeds it:
20 ms frames at the provider's rate, resampled to 16 kHz inside the detector."""

from __future__ import annotations

import numpy as np
import pytest

from huxleyd.handsfree.detector import MicroWakeDetector, WakeUnavailable, load_detector
from tests.fakes.wake_audio import CHATTER, SPEEDS, VOICES, espeak, mix, music, silence

pytest.importorskip("pymicro_wakeword")


def detections(detector: MicroWakeDetector, pcm: np.ndarray, rate_hz: int) -> int:
    frame = rate_hz // 50
    data = pcm.astype("<i2").tobytes()
    return sum(detector.feed(data[i : i + frame * 2]) for i in range(0, len(data), frame * 2))


@pytest.mark.parametrize("rate_hz", [24_000, 16_000])
def test_the_wake_phrase_is_detected_once_per_phrase(rate_hz: int) -> None:
    detector = MicroWakeDetector("okay_nabu", rate_hz)
    phrase = espeak("okay nabu", "en", 175, rate_hz)
    audio = np.concatenate([silence(1, rate_hz), phrase, silence(1.5, rate_hz)] * 3)
    assert detections(detector, audio, rate_hz) == 3


def test_most_voices_and_speeds_are_detected() -> None:
    detector = MicroWakeDetector("okay_nabu", 24_000)
    heard = 0
    for voice in VOICES:
        for speed in SPEEDS:
            detector.reset()
            audio = np.concatenate([silence(1), espeak("okay nabu", voice, speed), silence(1.5)])
            heard += detections(detector, audio, 24_000) > 0
    assert heard >= 0.9 * len(VOICES) * len(SPEEDS)


def test_other_models_and_other_words_do_not_fire() -> None:
    jarvis = MicroWakeDetector("hey_jarvis", 24_000)
    assert detections(jarvis, espeak("okay nabu"), 24_000) == 0
    nabu = MicroWakeDetector("okay_nabu", 24_000)
    speech = np.concatenate([espeak(text, voice) for text in CHATTER for voice in VOICES[:2]])
    assert detections(nabu, mix(speech, music(len(speech) / 24_000)), 24_000) == 0


def test_a_model_that_does_not_load_is_a_clear_unavailable() -> None:
    with pytest.raises(WakeUnavailable, match=r"wake word off: model '/nonexistent\.json'"):
        load_detector("/nonexistent.json", 24_000)
