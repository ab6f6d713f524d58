"""A stalled event loop beside a running audio engine (the engine-thread tests and
the daemon bench both stage it)."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import MicFrame
from tests.audio.signals import tone

STALL_PERIODS = 25
"""The loop stall: 25 periods of 20 ms."""
SAFETY_S = 60.0
"""Only a safety net: a thread that stops running fails the test, not hangs it."""


async def periods_pass(engine: AudioEngine, count: int) -> None:
    """Return once the audio thread has run ``count`` more periods."""
    until = engine.stats().periods + count
    deadline = time.monotonic() + SAFETY_S
    while engine.stats().periods < until:
        assert time.monotonic() < deadline, "the audio thread stopped running periods"
        await asyncio.sleep(0.005)


async def stall_scenario(
    *, lead_ms: int, capture_ring_ms: int
) -> tuple[AudioEngine, WavBackend, list[MicFrame], np.ndarray]:
    """Stream speech ``lead_ms`` ahead and read the mic, then block the loop for 500 ms.

    Counted in audio periods, not wall-clock seconds: the loop is blocked
    until the audio thread has run 25 periods (500 ms of audio), however long
    that takes on a loaded machine, so the stall is always the same size."""
    mic = (np.arange(24000 * 3) % 30000).astype(np.int16)
    backend = WavBackend(keep_speaker=True)
    backend.feed_mic(mic.tobytes())
    # the speech ring is the lead: write() waits while it is full
    settings = AudioSettings(speech_ring_ms=lead_ms, capture_ring_ms=capture_ring_ms)
    engine = AudioEngine(backend, settings=settings)
    speech = engine.source("speech")
    frames: list[MicFrame] = []
    pcm = tone(440, 3.0, -10)
    chunk = 4800  # 100 ms

    async def reader() -> None:
        while True:
            frames.append(await engine.read_mic())

    async def producer() -> None:  # like a provider streaming deltas
        for start in range(0, len(pcm), chunk):
            await speech.write(pcm[start : start + chunk], item_id="resp")

    engine.start()
    tasks = [asyncio.ensure_future(reader()), asyncio.ensure_future(producer())]
    await periods_pass(engine, 15)
    # The stall itself (a slow skill, a GC pause): the loop does nothing
    # while the thread plays 25 periods.
    stall_until = engine.stats().periods + STALL_PERIODS
    deadline = time.monotonic() + SAFETY_S
    while engine.stats().periods < stall_until and time.monotonic() < deadline:
        time.sleep(0.002)  # noqa: ASYNC251 - blocking on purpose
    await periods_pass(engine, 15)
    engine.close()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return engine, backend, frames, mic
