"""The PyAudio backend's logic against a fake ``pyaudio``: opening, xruns, loss and replug."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from huxleyd.audio.backends.base import IoStatus
from huxleyd.audio.backends.pyaudio_backend import PyAudioBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import DeviceState
from huxleyd.clock import ManualClock
from huxleyd.errors import AudioDeviceError
from tests.fakes.audio_pyaudio import (
    PA_HOST_ERROR,
    PA_INPUT_OVERFLOWED,
    PA_OUTPUT_UNDERFLOWED,
    FakePyAudioModule,
    device,
)

USB = device("USB PnP Sound Device: Audio (hw:2,0)", inputs=1, outputs=2, rate_hz=44100)


@pytest.fixture
def cards(tmp_path: Path) -> Path:
    path = tmp_path / "cards"
    path.write_text(" 2 [Device         ]: USB-Audio - USB PnP Sound Device\n")
    return path


def make(module: FakePyAudioModule, cards: Path, **kwargs: object) -> PyAudioBackend:
    return PyAudioBackend(
        capture_device="plughw:CARD=Device,DEV=0",
        playback_device="plughw:CARD=Device,DEV=0",
        pyaudio_module=module,
        cards_path=cards,
        **kwargs,  # type: ignore[arg-type]
    )


def test_open_uses_the_native_rate_and_primes_the_speaker(
    cards: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PA_ALSA_PLUGHW", raising=False)
    module = FakePyAudioModule([device("default"), USB])
    backend = make(module, cards)
    fmt = backend.open(period_ms=20)
    assert os.environ["PA_ALSA_PLUGHW"] == "1"  # plughw: PortAudio must open through plug
    assert (fmt.input_rate_hz, fmt.output_rate_hz, fmt.output_latency_s) == (44100, 44100, 0.03)
    capture = module.stream(output=False)
    playback = module.stream(output=True)
    assert capture.kwargs["input_device_index"] == 1 and capture.kwargs["frames_per_buffer"] == 882
    assert playback.written == [bytes(882 * 2)] * 2  # two periods of silence
    backend.close()
    assert capture.closed and playback.closed and module.session.terminated


def test_too_few_channels_is_a_clear_error(cards: Path) -> None:
    module = FakePyAudioModule([USB])
    backend = make(module, cards, input_channels=2)
    with pytest.raises(AudioDeviceError, match=r"has 1 input channel\(s\); 2 wanted"):
        backend.open(period_ms=20)
    assert module.session.terminated  # nothing left half-open


def test_an_xrun_is_never_an_error_and_other_errors_mean_lost(cards: Path) -> None:
    """Issue 13, case 7: PyAudio is never asked to raise on an overflow or an underflow
    (on that path it gives the period and the stream up); only a real error means lost."""
    module = FakePyAudioModule([USB])
    backend = make(module, cards, rate_hz=48000)
    backend.open(period_ms=20)
    buf = np.zeros((960, 1), dtype=np.int16)
    module.read_errors = [None, PA_INPUT_OVERFLOWED, PA_HOST_ERROR]
    assert backend.read(buf) is IoStatus.OK and buf[0, 0] == 1000
    assert backend.read(buf) is IoStatus.OK and buf[0, 0] == 1000  # the data, not a hole
    assert backend.read(buf) is IoStatus.LOST
    out = np.zeros((960, 1), dtype=np.int16)
    module.write_errors = [PA_OUTPUT_UNDERFLOWED, PA_HOST_ERROR]
    assert backend.write(out) is IoStatus.OK
    assert backend.write(out) is IoStatus.LOST


def test_a_write_that_finds_the_whole_buffer_free_is_an_underrun(cards: Path) -> None:
    """PyAudio drops PortAudio's paOutputUnderflowed; what the underrun leaves is a
    playback buffer free as a whole again (as at the open). The write primes it again,
    or the stream PortAudio restarted empty underruns at the next period too."""
    module = FakePyAudioModule([USB])
    module.write_available = [1920, 960, 1920, 960]  # open (before the prefill), 3 writes
    backend = make(module, cards, rate_hz=48000)
    backend.open(period_ms=20)
    playback = module.stream(output=True)
    out = np.ones((960, 1), dtype=np.int16)
    assert backend.write(out) is IoStatus.OK
    assert backend.write(out) is IoStatus.XRUN
    assert playback.written[-2:] == [bytes(960 * 2), out.tobytes()]  # primed, then the data
    assert backend.write(out) is IoStatus.OK


def test_frames_that_vanished_between_two_reads_are_an_overrun(cards: Path) -> None:
    """PyAudio drops paInputOverflowed; what the overrun leaves is frames missing: the
    card made (time x rate) more than the engine took plus what waits."""
    module = FakePyAudioModule([USB])
    clock = ManualClock()
    backend = make(module, cards, rate_hz=48000, clock=clock)
    backend.open(period_ms=20)
    buf = np.zeros((960, 1), dtype=np.int16)
    module.read_available = [0, 0, 1920, 0]
    assert backend.read(buf) is IoStatus.OK  # the first: nothing to compare with
    clock.advance(0.020)
    assert backend.read(buf) is IoStatus.OK  # a period made, a period taken
    clock.advance(0.060)
    assert backend.read(buf) is IoStatus.OK  # late, but all of it waited in the buffer
    clock.advance(0.100)
    assert backend.read(buf) is IoStatus.XRUN  # 4800 made, 960 taken, 1920 gone from the queue


async def test_unplug_and_replug_through_the_engine(cards: Path) -> None:
    module = FakePyAudioModule([device("default"), USB])
    clock = ManualClock()
    backend = make(module, cards)
    engine = AudioEngine(backend, settings=AudioSettings(reopen_interval_s=2.0), clock=clock)
    engine.run_periods(3)
    assert engine.stats().device_state is DeviceState.OPEN
    module.read_errors = [PA_HOST_ERROR]  # the USB cable is pulled
    module.devices = [device("default")]
    engine.step()
    assert engine.stats().device_state is DeviceState.LOST and module.session.terminated
    clock.advance(2.0)
    engine.step()  # retry: a fresh PortAudio session that does not list the card
    assert engine.stats().device_state is DeviceState.LOST
    assert len(module.sessions) == 2 and module.sessions[1].terminated
    module.devices = [device("default"), USB]  # plugged back in
    clock.advance(2.0)
    engine.step()
    assert engine.stats().device_state is DeviceState.OPEN and len(module.sessions) == 3
    engine.run_periods(2)
    assert engine.read_mic_nowait() is not None
    engine.close()
