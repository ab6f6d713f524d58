"""The mixer on its own: sums, gains, pause/resume, flush, the earcon gate, the limiter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from huxleyd.audio.channel import SourceChannel
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SOURCES, SourceName
from huxleyd.pcm import Float32Array

N = 480  # 20 ms at 24 kHz
RATE = 24000


def make_mixer(**kwargs: Any) -> tuple[Mixer, dict[SourceName, SampleRing]]:
    rings = {name: SampleRing(RATE * 5, name=name) for name in SOURCES}
    return Mixer(rings, period_samples=N, rate_hz=RATE, **kwargs), rings


def tone(freq_hz: float, seconds: float, amplitude: float) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return np.round(amplitude * 32767 * np.sin(2 * np.pi * freq_hz * t)).astype(np.int16)


def run(mixer: Mixer, periods: int) -> Float32Array:
    out = np.zeros(N, dtype=np.float32)
    chunks = []
    for _ in range(periods):
        mixer.mix(out)
        chunks.append(out.copy())
    return np.concatenate(chunks)


def test_sources_add_up_sample_for_sample() -> None:
    mixer, rings = make_mixer()
    a = tone(1000, 0.1, 0.2)
    b = tone(300, 0.1, 0.2)
    rings["speech"].write(a)
    rings["content"].write(b)
    out = run(mixer, 5)
    expected = (a.astype(np.float32) + b.astype(np.float32)) / 32768
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_a_source_that_runs_out_plays_silence_and_counts_the_dry_spell() -> None:
    mixer, rings = make_mixer()
    rings["speech"].write(tone(1000, 0.05, 0.3))  # 2.5 periods
    out = run(mixer, 4)
    assert np.all(out[1200:] == 0.0)
    assert np.any(out[:1200] != 0.0)
    assert mixer.channels["speech"].dry_count == 1


def test_pause_ramps_down_keeps_position_and_resume_continues_from_it() -> None:
    mixer, rings = make_mixer(ramp_ms=5.0)
    data = np.full(RATE, 8000, dtype=np.int16)
    rings["content"].write(data)
    run(mixer, 2)
    channel = mixer.channels["content"]
    channel.req_paused = True
    out = run(mixer, 3)
    ramp = 120  # 5 ms
    assert np.all(np.diff(out[:ramp]) <= 0) and out[ramp - 1] == 0.0  # a ramp, not a step
    assert np.all(out[ramp:] == 0.0)
    position = rings["content"].read_pos
    assert position == 2 * N + ramp  # stopped pulling after the ramp
    channel.req_paused = False
    out = run(mixer, 1)
    assert np.all(np.diff(out[:ramp]) >= 0) and out[0] < out[ramp]
    assert out[-1] == pytest.approx(8000 / 32768)
    assert rings["content"].read_pos == position + N


def test_flush_drops_queued_audio_after_a_ramp_and_logs_the_cut() -> None:
    mixer, rings = make_mixer(ramp_ms=5.0)
    rings["speech"].write(np.full(RATE, 10000, dtype=np.int16))
    run(mixer, 1)
    channel = mixer.channels["speech"]
    channel.req_flush_to = rings["speech"].write_pos
    channel.req_flush_seq += 1
    rings["speech"].write(np.full(N, 5000, dtype=np.int16))  # written after the flush: kept
    out = run(mixer, 2)
    assert out[0] > 0.0 and np.all(out[120:N] == 0.0)
    assert out[N:] == pytest.approx(np.full(N, 5000 / 32768))
    assert channel.playout.skips.since(0) == [(N + 120, RATE)]


def test_duck_moves_linearly_in_db_and_never_touches_other_sources() -> None:
    mixer, rings = make_mixer(duck_depth_db=-12.0, duck_attack_ms=80.0, duck_release_ms=600.0)
    rings["content"].write(np.full(RATE * 2, 8000, dtype=np.int16))
    mixer.channels["content"].req_ducked = True
    out = run(mixer, 6)
    ends_db = [20 * np.log10(out[(i + 1) * N - 1] / (8000 / 32768)) for i in range(6)]
    assert ends_db == pytest.approx([-3.0, -6.0, -9.0, -12.0, -12.0, -12.0], abs=1e-3)
    mixer.channels["content"].req_ducked = False
    out = run(mixer, 30)
    ends_db = [20 * np.log10(out[(i + 1) * N - 1] / (8000 / 32768)) for i in range(30)]
    assert ends_db[0] == pytest.approx(-11.6, abs=1e-3)  # 12 dB / 30 periods
    assert ends_db[14] == pytest.approx(-6.0, abs=1e-3)
    assert ends_db[29] == pytest.approx(0.0, abs=1e-3)
    assert np.all(np.diff(out) >= -1e-7)  # monotonic: no zipper steps downwards


def test_earcon_before_speech_holds_speech_and_joins_it_without_a_gap() -> None:
    mixer, rings = make_mixer()
    earcon = np.full(700, 3000, dtype=np.int16)  # ends 220 samples into period 2
    speech = np.full(N * 2, 6000, dtype=np.int16)
    rings["earcon"].write(earcon)
    mixer.req_gate = (1, rings["earcon"].write_pos, rings["speech"].write_pos)
    rings["speech"].write(speech)
    out = run(mixer, 4)
    levels = np.round(out * 32768).astype(int)
    assert np.all(levels[:700] == 3000)
    assert np.all(levels[700 : 700 + 2 * N] == 6000)
    assert np.all(levels[700 + 2 * N :] == 0)
    speech_channel = mixer.channels["speech"]
    assert (speech_channel.pull_start, speech_channel.pull_offset) == (N * 2 - 220, 0)


def test_master_gain_ramps_over_one_period() -> None:
    mixer, rings = make_mixer()
    rings["comms"].write(np.full(N * 3, 16000, dtype=np.int16))
    run(mixer, 1)
    mixer.req_master_gain = 0.25
    out = run(mixer, 2)
    assert out[0] < 16000 / 32768 and out[N - 1] == pytest.approx(0.25 * 16000 / 32768)
    assert np.all(np.diff(out[:N]) <= 0)
    assert out[N:] == pytest.approx(np.full(N, 0.25 * 16000 / 32768))


def test_four_full_scale_sources_never_wrap() -> None:
    mixer, rings = make_mixer()
    for name, freq in zip(SOURCES, (200, 300, 500, 700), strict=True):
        rings[name].write(tone(freq, 0.5, 1.0))
    out = run(mixer, 25)
    assert np.max(np.abs(out)) < 1.0
    reference = np.sum([tone(f, 0.5, 1.0).astype(np.float64) for f in (200, 300, 500, 700)], axis=0)
    # the shape survives: where the plain sum is positive so is the output
    # (int16 wrap-around would flip signs)
    loud = np.abs(reference) > 3000
    assert np.all(np.sign(out[loud]) == np.sign(reference[loud]))
    assert mixer.limiter.active_periods > 0


def test_limiter_is_transparent_below_its_threshold() -> None:
    mixer, rings = make_mixer()
    quiet = tone(440, 0.2, 0.4)
    rings["speech"].write(quiet)
    rings["content"].write(quiet)
    out = run(mixer, 10)
    np.testing.assert_allclose(out, 2 * quiet.astype(np.float32) / 32768, atol=1e-6)
    assert mixer.limiter.active_periods == 0


def test_an_idle_period_skipped_leaves_each_channel_as_mixing_it_would() -> None:
    """The idle path (``SourceChannel.skip_idle``: no arithmetic) against the C core on
    the same silent period: a source that ran out after a full period counts its dry
    spell either way, and every published field agrees."""
    mixed, mixed_rings = make_mixer()
    skipped, skipped_rings = make_mixer()
    for rings in (mixed_rings, skipped_rings):
        rings["speech"].write(tone(1000, N / RATE, 0.3))  # exactly one period
    run(mixed, 1)
    run(skipped, 1)
    speech: SourceChannel = skipped.channels["speech"]
    assert speech.idle() and skipped.idle()
    run(mixed, 1)
    skipped.skip_idle()
    for name in SOURCES:
        a, b = mixed.channels[name], skipped.channels[name]
        assert (a.pull_start, a.pull_offset, a.pull_count, a.dry_count, a.skip_to) == (
            b.pull_start,
            b.pull_offset,
            b.pull_count,
            b.dry_count,
            b.skip_to,
        ), name
    assert speech.dry_count == 1
