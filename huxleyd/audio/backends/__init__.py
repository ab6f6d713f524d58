"""Sound-device backends behind one small interface (:class:`~.base.AudioBackend`).

- :class:`~.pyaudio_backend.PyAudioBackend` — PortAudio on ALSA, for real devices.
- :class:`~.wav_backend.WavBackend` — mic from a WAV (or fed PCM), speaker to a
  WAV; the engine's clock paces it, so tests run faster than real time.
"""

from huxleyd.audio.backends.base import AudioBackend, DeviceFormat, IoStatus

__all__ = ["AudioBackend", "DeviceFormat", "IoStatus"]
