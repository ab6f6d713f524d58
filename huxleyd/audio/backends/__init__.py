"""Sound-device backends behind one small interface (:class:`~.base.AudioBackend`).

- :class:`~.callback_backend.CallbackBackend` — the card through PortAudio on ALSA:
  C callbacks play and capture (:class:`~.portaudio_card.PortAudioCard`, PyAudio as
  the device finder, is its base).
- :class:`~.wav_backend.WavBackend` — mic from a WAV (or fed PCM), speaker to a
  WAV; the engine's clock paces it, so tests run faster than real time.
"""

from huxleyd.audio.backends.base import AudioBackend, DeviceFormat, IoStatus

__all__ = ["AudioBackend", "DeviceFormat", "IoStatus"]
