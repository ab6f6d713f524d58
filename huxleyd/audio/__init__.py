"""The audio layer: the real-time engine thread, PCM rings, the ducking mixer,
the resampler, device backends (PyAudio, WAV file) and volume control.

Everything the user hears and everything the model hears passes through here.
"""
