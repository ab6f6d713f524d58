"""The echo canceller on the clocked fake card, in a child (``python -m tests.fakes.echo_child``).

The parent writes the card's ``.asoundrc`` with a room
(:func:`tests.fakes.clockcard.write_asoundrc`, ``room=``): the card's capture
hears what its playback really played, by the card's clock. This child runs
the engine on the C callback backend with its far end on, and hands the
played periods and the mic frames to the wake word's detector exactly as the
daemon's wake thread does (``WakeListener._process``: the far end first, then
the frame with its capture time). Each mode prints one JSON object; times are
``time.monotonic_ns()``, the card's clock.

- ``erle <seconds>``: the device plays its speech over music (``seconds`` of
  it) into the room; reports the canceller's input and output power per 10 ms
  block (16 kHz), from which the parent computes the ERLE and its convergence.
- ``stamps <bursts>``: the device plays tone bursts between silences; reports
  the DAC time the engine gave each far-end period and its samples' onsets, so
  the parent can place each burst where the card's recording heard it.
- ``micstamps <seconds>``: the card's mic file holds tone bursts (the parent's);
  while the device plays its speech over music (no room: the mic hears only its
  file), reports each burst's onset in the mic frames, placed by the capture
  time the engine gave its frame, so the parent can compare it with when the
  card captured that frame of the file; and the backend's stamp counts.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import numpy as np

from tests.fakes.clockcard_child import describe, make_engine, make_settings

RATE_IN_HZ = 24_000
DEVICE_HZ = 48_000


def reply_audio(seconds: float) -> np.ndarray:
    """The device's voice over music at 24 kHz (about -20 dBFS): what it plays."""
    from tests.fakes.wake_audio import CHATTER, espeak, mix, music

    speech = np.concatenate([espeak(t, "en-gb-x-rp", 175, RATE_IN_HZ) for t in CHATTER])
    speech = np.resize(speech, int(seconds * RATE_IN_HZ))
    return mix(speech * 0.5, music(seconds, RATE_IN_HZ, seed=5) * 0.5)


async def erle(seconds: float) -> dict[str, Any]:
    from huxleyd.handsfree.detector import MicroWakeDetector

    engine = make_engine("callback", DEVICE_HZ)
    engine.enable_far_end()
    engine.start()
    engine.set_capture_active(True)
    detector = MicroWakeDetector("okay_nabu", RATE_IN_HZ, cancel_echo=True)
    powers: list[tuple[float, float]] = []
    detector.echo_tap = lambda mic, clean: powers.append(
        (float(np.sum(mic.astype(np.float64) ** 2)), float(np.sum(clean.astype(np.float64) ** 2)))
    )
    for _ in range(25):  # opened and settled: the room hears silence
        await engine.read_mic()
    speech = engine.source("speech")
    started = len(powers)
    audio = reply_audio(seconds).astype("<i2").tobytes()
    writer = asyncio.ensure_future(speech.write(audio, item_id="reply"))
    frames = int(seconds * 50) + 25
    mic_stamps: list[tuple[int, float]] = []
    far_stamps: list[float] = []
    for _ in range(frames):
        frame = await engine.read_mic()
        mic_stamps.append((frame.seq, frame.captured_at))
        while (played := engine.read_far_end()) is not None:
            far_stamps.append(played.captured_at)
            detector.played(played.pcm, played.captured_at)
        detector.feed(frame.pcm, frame.captured_at)
    await writer
    stats = engine.stats()
    engine.close()
    assert detector.echo is not None
    restarts = {  # older cancellers (the bench's "before") kept no timelines
        "mic": getattr(getattr(detector.echo, "mic_time", None), "restarts", None),
        "far": getattr(getattr(detector.echo.far, "timeline", None), "restarts", None),
    }
    return {
        "powers": powers[started:],
        "restarts": restarts,
        "mic_stamps": mic_stamps,
        "far_stamps": far_stamps,
        **describe(stats),
    }


def burst_train(bursts: int) -> np.ndarray:
    """``bursts`` 100 ms tone bursts (1 kHz, -12 dBFS), each after 400 ms of silence."""
    t = np.arange(int(0.1 * RATE_IN_HZ)) / RATE_IN_HZ
    burst = 8000 * np.sin(2 * np.pi * 1000 * t)
    gap = np.zeros(int(0.4 * RATE_IN_HZ))
    return np.concatenate([np.concatenate([gap, burst]) for _ in range(bursts)] + [gap])


async def stamps(bursts: int) -> dict[str, Any]:
    engine = make_engine("callback", DEVICE_HZ)
    engine.enable_far_end()
    engine.start()
    engine.set_capture_active(True)
    for _ in range(10):
        await engine.read_mic()
    while engine.read_far_end() is not None:
        pass
    speech = engine.source("speech")
    writer = asyncio.ensure_future(
        speech.write(burst_train(bursts).astype("<i2").tobytes(), item_id="marks")
    )
    onsets: list[float] = []  # the DAC time of each burst's first sample, by the stamps
    loud = False
    for _ in range(bursts * 25 + 25):
        await engine.read_mic()
        while (played := engine.read_far_end()) is not None:
            samples = np.frombuffer(played.pcm, dtype="<i2")
            above = np.flatnonzero(np.abs(samples) > 1000)
            if not loud and len(above):
                onsets.append(played.captured_at + int(above[0]) / played.rate_hz)
            loud = (
                bool(np.abs(samples[-RATE_IN_HZ // 1000 :]).max() > 1000) if len(above) else False
            )
    await writer
    stats = engine.stats()
    engine.close()
    return {"onsets_s": onsets, **describe(stats)}


def onsets_in(
    samples: np.ndarray, start_s: float, rate_hz: int, loud: bool
) -> tuple[list[float], bool]:
    """The times of the samples above 1000 that follow a quiet stretch (``loud``:
    whether the previous block ended loud), and whether this block ends loud."""
    above = np.abs(samples.astype(np.int32)) > 1000
    found = []
    for i in np.flatnonzero(above):
        if not loud and not above[max(0, i - rate_hz // 100) : i].any():
            found.append(start_s + int(i) / rate_hz)
    return found, bool(above[-rate_hz // 100 :].any()) if len(samples) else loud


async def micstamps(seconds: float) -> dict[str, Any]:
    from huxleyd.audio.engine import AudioEngine
    from huxleyd.audio.factory import callback_backend

    settings = make_settings("callback", DEVICE_HZ)
    backend = callback_backend(settings)
    engine = AudioEngine(backend, settings=settings)
    engine.start()
    engine.set_capture_active(True)
    speech = engine.source("speech")
    writer = asyncio.ensure_future(
        speech.write(reply_audio(seconds).astype("<i2").tobytes(), item_id="reply")
    )
    onsets: list[float] = []
    loud = True  # a burst cut by the start is not an onset
    for _ in range(int(seconds * 50) + 25):
        frame = await engine.read_mic()
        while engine.read_far_end() is not None:
            pass
        found, loud = onsets_in(
            np.frombuffer(frame.pcm, dtype="<i2"), frame.captured_at, frame.rate_hz, loud
        )
        onsets += found
    await writer
    stats = engine.stats()
    counts = backend.input_stamp_counts()
    engine.close()
    return {"onsets_s": onsets, "stamp_counts": list(counts), **describe(stats)}


def main(argv: list[str]) -> int:
    mode = argv[0]
    if mode == "erle":
        result = asyncio.run(erle(float(argv[1])))
    elif mode == "micstamps":
        result = asyncio.run(micstamps(float(argv[1])))
    elif mode == "stamps":
        result = asyncio.run(stamps(int(argv[1])))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
