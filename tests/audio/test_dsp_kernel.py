"""The C kernel (``_dsp``) against the numpy reference: random control scripts, compared.

What must match and how closely (the kernel reproduces numpy's float32 operations
one by one, and the resampler's row sums in numpy's pairwise order):

- mixing, gains, fades, master gain, resampling, int16 conversion: bit for bit;
- the limiter's soft clip uses the C library's ``tanhf``, numpy its own: an ulp
  or so apart, so the speaker may differ by one int16 step where the clipper
  bends (and nowhere else);
- the meters' power: numpy's ``dot`` sums in BLAS order, the kernel in double,
  so RMS levels agree to 1e-4 dB; peaks are exact.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.limiter import SoftLimiter
from huxleyd.audio.resample import StreamResampler
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.types import SOURCES
from huxleyd.clock import ManualClock
from tests.audio.scripts import Script, poke
from tests.audio.signals import tone_samples

pytestmark = pytest.mark.skipif(KERNEL is None, reason="the C kernel is not built here")


def play_script(
    seed: int, *, kernel: object, rate_hz: int, loud: bool
) -> tuple[np.ndarray, list[bytes], list[tuple[float, ...]]]:
    """200 periods of random writes, ducks, pauses, flushes, gains, earcons, capture-rate
    switches and mic on/off; return the speaker, the mic frames and the meters."""
    rng = random.Random(seed)
    backend = WavBackend(keep_speaker=True, rate_hz=rate_hz, input_channels=2)
    mic = np.stack(
        [
            tone_samples(300, 4.5, -20, rate_hz=rate_hz),
            tone_samples(1234, 4.5, -3, rate_hz=rate_hz),
        ],
        axis=1,
    )
    backend.feed_mic(mic.astype("<i2").tobytes())
    engine = AudioEngine(
        backend,
        settings=AudioSettings(mic_channel=1),
        clock=ManualClock(),
        kernel=kernel,  # type: ignore[arg-type]
    )
    frames: list[bytes] = []
    meters: list[tuple[float, ...]] = []
    script = Script(
        write_p=0.2,
        other_source_p=0.5,
        control_p=0.08,
        level_dbfs=-1.0 if loud else -10.0,  # loud: four sources drive the limiter to clip
        seconds=(0.013, 0.05, 0.3),
        gains_db=(-6.0, 0.0, 3.0),
        masters=(0.5, 1.0, 1.5),
        mic_p=0.05,
    )
    for period in range(200):
        poke(engine, rng, period, script)
        engine.step()
        while (frame := engine.read_mic_nowait()) is not None:
            frames.append(frame.pcm)
        stats = engine.stats()
        meters.append(
            (
                stats.input_peak_dbfs,
                stats.input_rms_dbfs,
                stats.output_peak_dbfs,
                stats.output_rms_dbfs,
                *(float(engine.source(name).channel.playout.played_pos) for name in SOURCES),
            )
        )
    engine.close()
    return backend.speaker_samples()[:, 0].copy(), frames, meters


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rate_hz", [24000, 48000])
def test_the_kernel_matches_numpy_below_the_limiter(seed: int, rate_hz: int) -> None:
    fast, fast_mic, fast_meters = play_script(seed, kernel=KERNEL, rate_hz=rate_hz, loud=False)
    ref, ref_mic, ref_meters = play_script(seed, kernel=None, rate_hz=rate_hz, loud=False)
    assert np.any(ref != 0) and len(ref_mic) > 50  # the script really played and listened
    assert np.array_equal(fast, ref)
    assert fast_mic == ref_mic
    np.testing.assert_allclose(np.array(fast_meters), np.array(ref_meters), atol=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_the_kernel_matches_numpy_through_the_limiter(seed: int) -> None:
    fast, fast_mic, fast_meters = play_script(seed, kernel=KERNEL, rate_hz=48000, loud=True)
    ref, ref_mic, ref_meters = play_script(seed, kernel=None, rate_hz=48000, loud=True)
    assert np.max(np.abs(ref.astype(np.int32))) > 0.891 * 32767  # the limiter had work
    assert np.max(np.abs(fast.astype(np.int32) - ref)) <= 1
    assert fast_mic == ref_mic
    np.testing.assert_allclose(np.array(fast_meters), np.array(ref_meters), atol=1e-3)


@settings(max_examples=60, deadline=None)
@given(
    gain=st.floats(0.05, 1.0),
    scale=st.floats(0.1, 4.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_limiter_matches_numpy(gain: float, scale: float, seed: int) -> None:
    block = (np.random.default_rng(seed).standard_normal(480) * scale).astype(np.float32)
    fast = SoftLimiter(480, rate_hz=24000, kernel=KERNEL)
    ref = SoftLimiter(480, rate_hz=24000, kernel=None)
    fast.gain = ref.gain = gain
    a, b = block.copy(), block.copy()
    fast.process(a)
    ref.process(b)
    assert fast.gain == ref.gain and fast.active_periods == ref.active_periods
    np.testing.assert_allclose(a, b, rtol=0, atol=2e-7)  # tanh: an ulp or two
    assert np.max(np.abs(a)) < 1.0


@settings(max_examples=40, deadline=None)
@given(
    rates=st.sampled_from([(24000, 48000), (48000, 24000), (48000, 16000), (44100, 24000)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_resampler_is_bit_identical(rates: tuple[int, int], seed: int) -> None:
    rate_in, rate_out = rates
    block = rate_in // 50
    fast = StreamResampler(rate_in, rate_out, block, kernel=KERNEL)
    ref = StreamResampler(rate_in, rate_out, block, kernel=None)
    rng = np.random.default_rng(seed)
    out_fast = np.zeros(fast.block_out, np.float32)
    out_ref = np.zeros(ref.block_out, np.float32)
    for _ in range(3):
        x = (rng.standard_normal(block) * 0.5).astype(np.float32)
        fast.process(x, out_fast)
        ref.process(x, out_ref)
        assert np.array_equal(out_fast, out_ref)
