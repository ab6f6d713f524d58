"""An hour of audio that is not the wake word starts no turn, run as fast as
the detector goes (not in real time).

The hour is :func:`tests.fakes.wake_audio.hour`. The path is the daemon's own from the mic frame on: the coordinator's mic
pump, :class:`~huxleyd.turns.wake.WakeWord`, the listener's thread and the
microWakeWord model (only the audio engine is the recording fake). The hour
is built from about twelve minutes of distinct material (espeak-ng chatter
in seven voices at three speeds, near misses included; synthetic music;
noise; the device's own replies heard through a synthetic room), played
five times at different levels and mixes: it keeps this test's run short.
The bench (``python -m bench handsfree``) runs the detector on sixty minutes
none of which repeats (:func:`tests.fakes.wake_audio.distinct_hour`) and
reports the false accepts per hour.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from huxleyd.audio.types import MicFrame
from huxleyd.handsfree.detector import load_detector
from huxleyd.handsfree.listener import WakeListener
from huxleyd.handsfree.settings import WakeSettings
from huxleyd.turns.wake import WakeWord
from tests.fakes.clock import settle
from tests.fakes.turn_rig import Rig
from tests.fakes.wake_audio import HOUR_S, corpus, hour

pytest.importorskip("pymicro_wakeword")

RATE = 24_000
FRAME = RATE // 50


def test_an_hour_of_other_audio_starts_no_turn() -> None:
    # Its own event loop, not the suite's 60 s cap for async tests: on a loaded
    # machine the hour takes longer, and a test must not go red for load.
    # (Each step has its own bound: wait_drained.)
    asyncio.run(an_hour_of_other_audio())


async def an_hour_of_other_audio() -> None:
    audio = hour(corpus()).astype("<i2").tobytes()
    settings = WakeSettings(model="okay_nabu")
    woke: list[float] = []
    listener = WakeListener(load_detector("okay_nabu", RATE), woke.append, queue_frames=400)
    listener.start(asyncio.get_running_loop())
    wake = WakeWord(listener, settings, playback_ok=False)
    rig = Rig(wake=wake)
    started = time.perf_counter()
    try:
        async with rig:
            frames = len(audio) // (FRAME * 2)
            at = rig.clock.monotonic()
            for i in range(frames):
                pcm = audio[i * FRAME * 2 : (i + 1) * FRAME * 2]
                rig.audio.mic.put_nowait(MicFrame(pcm, RATE, at + i * 0.02, i))
                if i % 200 == 199:  # in steps the listener's queue holds, never dropping
                    await wait_heard(listener, rig)
            await wait_heard(listener, rig)
            assert listener.frames_heard == frames == HOUR_S * 50
            assert listener.frames_dropped == 0
            assert woke == [] and listener.detections == 0
            assert rig.coordinator.last_turn is None and rig.coordinator.turn is None
            assert rig.provider.appended_bytes == 0
    finally:
        listener.close()
    print(f"an hour of non-wake audio in {time.perf_counter() - started:.1f} s: 0 detections")


async def wait_heard(listener: WakeListener, rig: Rig) -> None:
    """Until the pump has taken every frame and the detector has heard it."""
    while not rig.audio.mic.empty():
        await settle()
    assert await asyncio.to_thread(listener.wait_drained, 120.0), "the detector fell silent"
