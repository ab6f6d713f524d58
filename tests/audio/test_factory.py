"""Backend choice from settings: auto falls back to WAV files, and says so."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from huxleyd.audio.backends.callback_backend import CallbackBackend
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.factory import build_engine, callback_backend, choose_backend, wav_backend
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
    assert isinstance(backend, CallbackBackend)  # the card's one path: C callbacks, C mix
    assert module.session.terminated and not module.session.streams  # a look, nothing opened
    assert "audio_backend backend=callback" in caplog.text


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


def test_every_backend_is_built_from_its_settings(tmp_path: Path) -> None:
    settings = AudioSettings(
        capture_device="hw:CARD=mic,DEV=0",
        playback_device="hw:CARD=spk,DEV=0",
        device_rate_hz=44_100,
        input_channels=2,
        output_channels=2,
        ramp_ms=7.0,
        wav_rate_hz=16_000,
        speaker_wav=tmp_path / "out.wav",
    )
    card = ("hw:CARD=mic,DEV=0", "hw:CARD=spk,DEV=0", 44_100, 2, 2)
    callback = callback_backend(settings)
    shape = (callback.capture_device, callback.playback_device, callback.rate_hz)
    assert (*shape, callback.input_channels, callback.output_channels) == card
    assert callback.fade_ms == 7.0
    wav = wav_backend(settings)
    assert (wav.rate_hz, wav.input_channels, wav.output_channels) == (16_000, 2, 2)
