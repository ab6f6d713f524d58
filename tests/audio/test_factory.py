"""Backend choice from settings: auto falls back to WAV files, and says so."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from huxleyd.audio.backends.pyaudio_backend import PyAudioBackend
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.factory import build_engine, choose_backend
from huxleyd.audio.pacing import ScaledClock
from huxleyd.audio.settings import AudioSettings
from tests.fakes.audio_pyaudio import FakePyAudioModule, device


def test_auto_uses_the_card_when_portaudio_lists_it(caplog: pytest.LogCaptureFixture) -> None:
    module = FakePyAudioModule(
        [device("huxley_capture", outputs=0), device("huxley_playback", inputs=0)]
    )
    settings = AudioSettings(capture_device="huxley_capture", playback_device="huxley_playback")
    with caplog.at_level(logging.INFO, logger="huxleyd.audio"):
        backend, _ = choose_backend(settings, pyaudio_module=module)
    assert isinstance(backend, PyAudioBackend)
    assert module.session.terminated  # the probe let go of the device again
    assert "audio_backend backend=pyaudio" in caplog.text


def test_auto_falls_back_to_wav_and_says_why(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    module = FakePyAudioModule([device("default")])
    settings = AudioSettings(
        capture_device="plughw:CARD=nope,DEV=0", speaker_wav=tmp_path / "out.wav", wav_speed=20.0
    )
    with caplog.at_level(logging.INFO, logger="huxleyd.audio"):
        backend, clock = choose_backend(settings, pyaudio_module=module)
    assert (
        isinstance(backend, WavBackend) and isinstance(clock, ScaledClock) and clock.speed == 20.0
    )
    assert "audio_backend_fallback" in caplog.text and "no sound card with id 'nope'" in caplog.text


def test_build_engine_writes_the_speaker_wav(tmp_path: Path) -> None:
    engine = build_engine(AudioSettings(backend="wav", speaker_wav=tmp_path / "out.wav"))
    engine.run_periods(5)
    engine.close()
    assert (tmp_path / "out.wav").stat().st_size == 44 + 5 * 480 * 2
