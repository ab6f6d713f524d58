"""Build the engine the settings ask for (the daemon's one call into this package's wiring).

``audio.backend``:

- ``"callback"`` — the sound card through PortAudio/ALSA: the C callbacks of
  :mod:`huxleyd.audio._rt` play and capture out of the GIL, and the C feeder mixes
  the speaker. Without that extension built nothing can play: the open fails,
  saying so, is retried, and the start reports the audio part degraded
  (:func:`~.backends.callback_backend.forced_callback_missing`).
- ``"wav"`` — files: ``mic_wav`` (or silence) in, ``speaker_wav`` out, at
  ``wav_speed`` times real time.
- ``"auto"`` — the card when PortAudio lists the configured devices (PyAudio, the
  device finder, is asked: :meth:`~.backends.portaudio_card.PortAudioCard.probe`),
  else the WAV backend, and the log says which and why.

(``"pyaudio"``, PyAudio's blocking I/O, was a second path to the card until issue
39; a huxleyd.toml that still asks for it is refused, naming ``audio.backend``.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, TypedDict

from huxleyd.audio.backends.base import AudioBackend
from huxleyd.audio.backends.callback_backend import CallbackBackend
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.pacing import ScaledClock
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import Clock, MonotonicClock
from huxleyd.errors import AudioDeviceError
from huxleyd.logs import get_logger
from huxleyd.pcm import RATE_HZ

log = get_logger("huxleyd.audio")


class _Channels(TypedDict):
    input_channels: int
    output_channels: int


class _CardArgs(_Channels):
    """What every sound-card backend is built from: the devices and their shape."""

    capture_device: str
    playback_device: str
    rate_hz: int | None
    """None: the card's own default rate."""


def _channels(settings: AudioSettings) -> _Channels:
    """The channel counts every backend, card or file, is built with."""
    return _Channels(
        input_channels=settings.input_channels, output_channels=settings.output_channels
    )


def _card(settings: AudioSettings) -> _CardArgs:
    return _CardArgs(
        capture_device=settings.capture_device,
        playback_device=settings.playback_device,
        rate_hz=settings.device_rate_hz,
        **_channels(settings),
    )


def callback_backend(settings: AudioSettings, *, pyaudio_module: Any = None) -> CallbackBackend:
    return CallbackBackend(
        **_card(settings), fade_ms=settings.ramp_ms, pyaudio_module=pyaudio_module
    )


def wav_backend(settings: AudioSettings) -> WavBackend:
    return WavBackend(
        mic_wav=settings.mic_wav,
        speaker_wav=settings.speaker_wav,
        rate_hz=settings.wav_rate_hz,
        keep_speaker=False,  # a daemon runs for days: the file is the record
        **_channels(settings),
    )


def choose_backend(
    settings: AudioSettings, *, pyaudio_module: Any = None
) -> tuple[AudioBackend, Clock]:
    """The backend for ``audio.backend`` and the clock that should pace it."""
    if settings.backend == "callback":
        return callback_backend(settings, pyaudio_module=pyaudio_module), MonotonicClock()
    if settings.backend == "auto":
        card = callback_backend(settings, pyaudio_module=pyaudio_module)
        try:
            card.probe()
        except AudioDeviceError as exc:
            log.warning("audio_backend_fallback", backend="wav", reason=str(exc))
        else:
            log.info("audio_backend", backend="callback")
            return card, MonotonicClock()
    clock: Clock = (
        MonotonicClock() if settings.wav_speed == 1.0 else ScaledClock(settings.wav_speed)
    )
    return wav_backend(settings), clock


def build_engine(
    settings: AudioSettings, *, capture_rate_hz: int = RATE_HZ, pyaudio_module: Any = None
) -> AudioEngine:
    """An engine on the backend ``settings`` choose (not started)."""
    backend, clock = choose_backend(settings, pyaudio_module=pyaudio_module)
    return AudioEngine(backend, settings=settings, clock=clock, capture_rate_hz=capture_rate_hz)


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Silence what C libraries print on fd 2 while PortAudio probes devices.

    On a machine without a card, ALSA and JACK print dozens of lines there;
    our own log line says what happened instead. Python-level logging is
    unaffected only if it does not write during the block (it does not).
    """
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def pick_backend(audio: AudioSettings) -> tuple[AudioBackend, str]:
    """The backend ``[audio] backend`` asks for (auto: the card when PyAudio finds it)."""
    with quiet_native_stderr():
        backend, _clock = choose_backend(audio)
    if isinstance(backend, WavBackend):
        where = f"mic {audio.mic_wav or 'silence'}, speaker {audio.speaker_wav or 'nowhere'}"
        return backend, f"wav ({where})"
    devices = f"{audio.capture_device} → {audio.playback_device}"
    kind = "callback" if isinstance(backend, CallbackBackend) else type(backend).__name__
    return backend, f"{kind} ({devices})"
