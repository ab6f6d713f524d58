"""The streaming resampler: identical to one-shot resampling, no seams at period edges."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import chirp, resample_poly

from huxleyd.audio.resample import StreamResampler

RATE_PAIRS = [
    (48000, 24000),
    (24000, 48000),
    (24000, 16000),
    (16000, 24000),
    (44100, 24000),
    (24000, 44100),
]


def stream(resampler: StreamResampler, signal: np.ndarray) -> np.ndarray:
    out = np.zeros(resampler.block_out, dtype=np.float32)
    chunks = []
    for start in range(0, len(signal), resampler.block_in):
        resampler.process(signal[start : start + resampler.block_in], out)
        chunks.append(out.copy())
    return np.concatenate(chunks)


def sweep(rate: int, seconds: float, top_hz: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    wave = chirp(t, f0=50, t1=seconds, f1=top_hz, method="logarithmic")
    return np.asarray(0.5 * wave, dtype=np.float32)


@pytest.mark.parametrize(("rate_in", "rate_out"), RATE_PAIRS)
def test_period_by_period_equals_all_at_once(rate_in: int, rate_out: int) -> None:
    period = rate_in // 50  # 20 ms
    signal = sweep(rate_in, 1.0, 0.45 * min(rate_in, rate_out))
    streamed = stream(StreamResampler(rate_in, rate_out, period), signal)
    whole = np.zeros(len(signal) * rate_out // rate_in, dtype=np.float32)
    StreamResampler(rate_in, rate_out, len(signal)).process(signal, whole)
    np.testing.assert_allclose(streamed, whole, atol=2e-6)


@pytest.mark.parametrize(
    ("rate_in", "rate_out"), [(48000, 24000), (24000, 48000), (24000, 16000), (16000, 24000)]
)
def test_a_sine_sweep_matches_scipy_resample_poly(rate_in: int, rate_out: int) -> None:
    period = rate_in // 50
    signal = sweep(rate_in, 2.0, 0.4 * min(rate_in, rate_out))
    resampler = StreamResampler(rate_in, rate_out, period)
    ours = stream(resampler, signal)
    reference = resample_poly(signal.astype(np.float64), resampler.up, resampler.down)
    shift = resampler.delay_in * rate_out / rate_in
    assert shift == int(shift)  # these ratios have a whole-sample delay
    shift = int(shift)
    aligned = ours[shift:]
    reference = reference[: len(aligned)]
    body = slice(200, len(aligned) - 200)  # scipy zero-pads both ends, we only the start
    error = aligned[body] - reference[body]
    error_db = 10 * np.log10(np.mean(error**2) / np.mean(reference[body] ** 2))
    assert error_db < -100  # float32 rounding only


@pytest.mark.parametrize(("rate_in", "rate_out"), RATE_PAIRS)
def test_no_seam_at_period_boundaries(rate_in: int, rate_out: int) -> None:
    """A pure tone in-band comes out as a pure tone: the error vs the ideal tone
    is as small at the sample after each period boundary as anywhere else."""
    period = rate_in // 50
    resampler = StreamResampler(rate_in, rate_out, period)
    freq = 1234.5
    n_in = rate_in  # one second
    t_in = np.arange(n_in) / rate_in
    signal = (0.5 * np.sin(2 * np.pi * freq * t_in)).astype(np.float32)
    ours = stream(resampler, signal)
    t_out = np.arange(len(ours)) / rate_out - resampler.delay_in / rate_in
    ideal = 0.5 * np.sin(2 * np.pi * freq * t_out)
    error = np.abs(ours - ideal)[resampler.block_out * 5 :]  # past the filter's start-up
    boundary = error[:: resampler.block_out]
    assert error.max() < 2e-3  # −54 dB re the tone: the filter's passband ripple
    assert boundary.max() <= error.max()
    assert np.mean(boundary) < 3 * np.mean(error) + 1e-6


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), blocks=st.integers(1, 6), spiky=st.booleans())
def test_streaming_is_exact_for_any_signal(seed: int, blocks: int, spiky: bool) -> None:
    rng = np.random.default_rng(seed)
    signal = rng.uniform(-1, 1, 960 * blocks).astype(np.float32)
    if spiky:  # impulses right at the block edges
        signal[:] = 0
        signal[959::960] = 1.0
        signal[::960] = -1.0
    small = stream(StreamResampler(48000, 16000, 960), signal)
    whole = np.zeros(len(signal) // 3, dtype=np.float32)
    StreamResampler(48000, 16000, len(signal)).process(signal, whole)
    np.testing.assert_allclose(small, whole, atol=2e-6)


def test_equal_rates_are_a_copy_with_no_delay() -> None:
    resampler = StreamResampler(24000, 24000, 480)
    block = np.linspace(-1, 1, 480, dtype=np.float32)
    out = np.zeros(480, dtype=np.float32)
    resampler.process(block, out)
    assert resampler.identity and resampler.delay_in == 0
    np.testing.assert_array_equal(out, block)


def test_a_block_that_does_not_divide_is_refused_with_the_numbers() -> None:
    with pytest.raises(ValueError, match="220 samples at 11025 Hz"):
        StreamResampler(11025, 24000, 220)


@pytest.mark.parametrize(("rate_in", "rate_out"), RATE_PAIRS)
def test_priming_instead_of_processing_changes_no_later_output(rate_in: int, rate_out: int) -> None:
    """The idle mic primes instead of resampling; the first frame heard after is the same."""
    period = rate_in // 50
    signal = sweep(rate_in, 0.2, 0.45 * min(rate_in, rate_out))
    processed, primed = (
        StreamResampler(rate_in, rate_out, period),
        StreamResampler(rate_in, rate_out, period),
    )
    out_a = np.zeros(processed.block_out, dtype=np.float32)
    out_b = np.zeros(primed.block_out, dtype=np.float32)
    blocks = [signal[start : start + period] for start in range(0, len(signal), period)]
    for block in blocks[:-1]:
        processed.process(block, out_a)
        primed.prime(block)
    processed.process(blocks[-1], out_a)
    primed.process(blocks[-1], out_b)
    assert np.array_equal(out_a, out_b)
