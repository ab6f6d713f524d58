"""The audio layer: the real-time engine thread, PCM rings, the ducking mixer,
the resampler, device backends (the card through PortAudio's C callbacks, WAV file) and volume control.

Everything the user hears and everything the model hears passes through here.
Audio at every interface is PCM16 little-endian mono 24 kHz (``bytes``);
devices run at their own rate and the engine resamples at its edges.

This ``__init__`` imports nothing heavy (``huxleyd.config.load`` imports
:mod:`huxleyd.audio.settings`); import from the submodules named below.

Building and running (``huxleyd.audio.factory``, ``huxleyd.audio.engine``)::

    engine = build_engine(config.audio)          # backend from audio.backend ("auto": card or WAV)
    engine = AudioEngine(backend, *, settings, clock=None, capture_rate_hz=24000)
    engine.start()                               # opens the device, starts the thread
    engine.close(timeout_s=2.0)                  # idempotent; joins the thread
    engine.step() / engine.run_periods(n)        # drive by hand instead of start() (tests)
    engine.on_device_state(callback)             # callback(DeviceState) on the event loop

Playback — sources ``"speech"``, ``"earcon"``, ``"content"``, ``"comms"``::

    src = engine.source("speech")                # -> PlaybackSource, the port (huxleyd.audio.source)
    await src.write(pcm, item_id="item_1")       # waits for room; never blocks the thread
    src.write_nowait(pcm)                        # all or AudioError
    src.duck() / src.unduck()                    # -12 dB, 80 ms attack, 600 ms release (settings)
    src.pause() / src.resume()                   # 5 ms fades; pause keeps position
    src.flush()                                  # barge-in: drop queued audio after a 5 ms fade;
                                                 # a write() waiting for room gives up its rest
    src.set_gain(gain_db)                        # per-source trim (not the user's volume)
    engine.set_master_gain(linear)               # the software volume stage
    handle = engine.play_earcon(pcm, *, before_speech=True, item_id=None)
                                                 # queued at once (AudioError if it does not fit);
                                                 # speech not yet started waits for it, then
                                                 # follows on the next sample. ``await handle``
                                                 # returns at once; ``await handle.heard()`` waits.

Playout clock (the accounting itself: ``huxleyd.audio.playout``)::

    src.played_ms(item_id) -> int                # heard at the device: audio_end_ms
    src.queued_ms() / src.buffered_ms() / src.idle()
    await src.drained()                          # everything queued so far has been heard
    await src.wait_played(position)              # ... up to a ring position (write_pos)

Capture::

    frame = await engine.read_mic()              # MicFrame(pcm, rate_hz, captured_at, seq)
    engine.read_mic_nowait() -> MicFrame | None
    engine.drain_mic() -> int                    # PTT press: discard old frames
    engine.set_capture_rate(16000)               # 24000 or 16000, from the next period

Health::

    engine.stats() -> EngineStats                # periods (progress), underruns, overruns,
                                                 # late_periods, mic_frames_dropped, source_gaps,
                                                 # device_state, in/out peak+RMS dBFS, latency
    engine.crash                                 # the exception that killed the thread, if any

Volume (``huxleyd.audio.volume``)::

    volume = await open_volume(settings, engine) # AlsaMixerVolume, or SoftwareVolume(engine)
    volume = PersistentVolume(volume, store)     # store: LevelStore (async load()/save(level))
    await volume.restore(); await volume.set_level(40) -> 40 (read back); await volume.get_level()

Earcons (``huxleyd.audio.earcons``)::

    sounds = load_earcons(directory)             # {Earcon.LISTEN_START: pcm, ...}

PCM vocabulary, for every layer (``huxleyd.pcm``)::

    RATE_HZ, BYTES_PER_MS                        # 24000, 48: the contract between components
    bytes_to_ms(n, rate_hz) / ms_to_bytes(ms, rate_hz) / samples_to_ms / ms_to_samples
    parse_wav(data, *, what, channels=None) -> WavData   # the one WAV parser (WavFormatError)
    read_wav(path) / write_wav(path, samples) / wav_bytes(pcm, rate_hz)
    resample(samples, from_hz, to_hz) / resample_pcm16(pcm, from_hz, to_hz)  # whole buffers

Scenario tests drive the real engine over :class:`~huxleyd.audio.backends.wav_backend.WavBackend`
(``feed_mic(pcm)``; with ``keep_speaker=True``: ``speaker_samples()``/``speaker_pcm()``) either with ``step()`` or on
its thread with a :class:`~huxleyd.audio.pacing.ScaledClock` (e.g. 20x real time).
"""
