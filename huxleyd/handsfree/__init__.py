"""Hands-free listening, opt-in: a local wake word and the end of speech it needs.

Layer: beside ``turns`` (the coordinator sees it only through
``turns/ports.py``'s ``WakePort``). Nothing here sends audio anywhere: the
detector hears the mic on the device, and only a detection opens a turn,
which is when the coordinator starts sending frames to the provider.

- ``settings``: ``[wake]`` of huxleyd.toml, checked on the path that
  ``--check-config`` and the start share.
- ``detector``: the microWakeWord model (``pymicro-wakeword``, optional) fed
  16 kHz PCM16; the provider's rate is resampled here, off the audio thread.
- ``listener``: the detector on its own thread, fed from the loop without
  ever blocking it; a detection is handed back with ``call_soon_threadsafe``.
- ``vad``: the end of the user's speech in a wake turn (nobody releases a
  button), with a maximum turn length.
"""
