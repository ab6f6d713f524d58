"""The echo canceller's far end from the engine: what each period sent to the
device, stamped with when it reaches the DAC."""

from __future__ import annotations

import numpy as np

from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import MicFrame
from huxleyd.clock import ManualClock
from tests.audio.signals import tone
from tests.audio.test_engine import make_engine, speaker


def far_frames(engine: object) -> list[MicFrame]:
    frames = []
    while (frame := engine.read_far_end()) is not None:  # type: ignore[attr-defined]
        frames.append(frame)
    return frames


async def test_the_far_end_is_what_the_speaker_got_stamped_by_dac_time() -> None:
    clock = ManualClock()
    backend = WavBackend(keep_speaker=True, output_latency_s=0.05)
    engine = AudioEngine(backend, settings=AudioSettings(backend="wav"), clock=clock)
    engine.enable_far_end()
    await engine.source("speech").write(tone(440, 0.2, -6), item_id="a")
    written_at = []
    for _ in range(10):
        written_at.append(clock.monotonic())
        engine.step()
        clock.advance(0.02)
    frames = far_frames(engine)
    assert len(frames) == 10
    played = np.concatenate([np.frombuffer(f.pcm, "<i2") for f in frames])
    np.testing.assert_array_equal(played, speaker(backend)[: len(played)])
    # each period reaches the DAC the device's output latency after it was written
    np.testing.assert_allclose([f.captured_at for f in frames], np.add(written_at, 0.05))


async def test_without_a_canceller_nothing_is_kept() -> None:
    engine, _ = make_engine()
    await engine.source("speech").write(tone(440, 0.1, -6), item_id="a")
    engine.run_periods(5)
    assert engine.read_far_end() is None
