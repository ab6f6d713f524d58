"""PyAudio as the device finder (``backends/portaudio_card.py``) against a fake ``pyaudio``:
the card is found by its ALSA name, its channels are checked, each look is a fresh
PortAudio session (so a replugged card is found), and nothing is left open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from huxleyd.audio.backends.callback_backend import CallbackBackend
from huxleyd.audio.backends.portaudio_card import PortAudioCard
from huxleyd.errors import AudioDeviceError
from tests.fakes.audio_pyaudio import FakePyAudioModule, device

USB = device("USB PnP Sound Device: Audio (hw:2,0)", inputs=1, outputs=2, rate_hz=44100)


@pytest.fixture
def cards(tmp_path: Path) -> Path:
    path = tmp_path / "cards"
    path.write_text(" 2 [Device         ]: USB-Audio - USB PnP Sound Device\n")
    return path


def make(module: FakePyAudioModule, cards: Path, **kwargs: object) -> CallbackBackend:
    return CallbackBackend(
        capture_device="plughw:CARD=Device,DEV=0",
        playback_device="plughw:CARD=Device,DEV=0",
        pyaudio_module=module,
        cards_path=cards,
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_probe_finds_the_card_by_its_alsa_name_and_lets_go(
    cards: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PA_ALSA_PLUGHW", raising=False)
    module = FakePyAudioModule([device("default"), USB])
    finder = PortAudioCard(  # the device finder alone: no stream type of its own
        capture_device="plughw:CARD=Device,DEV=0",
        playback_device="plughw:CARD=Device,DEV=0",
        pyaudio_module=module,
        cards_path=cards,
    )
    finder.probe()
    assert os.environ["PA_ALSA_PLUGHW"] == "1"  # plughw: PortAudio must open through plug
    assert module.session.terminated and not module.session.streams  # no stream opened


def test_too_few_channels_is_a_clear_error(cards: Path) -> None:
    module = FakePyAudioModule([USB])
    backend = make(module, cards, input_channels=2)
    for look in (backend.probe, lambda: backend.open(period_ms=20)):
        with pytest.raises(AudioDeviceError, match=r"has 1 input channel\(s\); 2 wanted"):
            look()
        assert module.session.terminated  # nothing left half-open


def test_each_look_is_a_fresh_session_so_a_replugged_card_is_found(cards: Path) -> None:
    """PortAudio lists devices only when it initialises: a look that reused a session
    would never see the card come back."""
    module = FakePyAudioModule([device("default")])  # unplugged
    backend = make(module, cards)
    for tries in (1, 2):
        with pytest.raises(AudioDeviceError, match="no PortAudio device is hw:2,0"):
            backend.open(period_ms=20)
        assert len(module.sessions) == tries and module.sessions[-1].terminated
    module.devices = [device("default"), USB]  # plugged back in
    backend.probe()
    assert len(module.sessions) == 3 and module.sessions[-1].terminated
