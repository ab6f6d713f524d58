"""The C mixer core (``_mixcore.c``) against the numpy oracle, on scripts Hypothesis writes.

One mixing semantics, two implementations: the daemon's :class:`~huxleyd.audio.mixer.Mixer`
runs the whole period in C, the oracle (``tests/oracles/numpy_mixer.py``) in numpy.
(``test_mix_oracle.py`` runs a few hundred seeded scenes besides.) Hypothesis writes random scripts of writes, gains, ducks, pauses,
resumes, flushes, master gains and earcon gates (small rings, so they wrap; loud
sources, so the limiter bends) and the two must agree period for period: the
output to float32 rounding (bit for bit but for the limiter's tanh, an ulp or two
apart), and every field the rest of the engine reads (pull positions, dry counts,
what a flush dropped, pause and duck state, the limiter's gain).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SOURCES, SourceName
from tests.oracles.numpy_mixer import NumpyMixer

pytestmark = pytest.mark.skipif(KERNEL is None, reason="the C kernel is not built here")

N = 240  # 10 ms at 24 kHz
RATE = 24000
CAPACITY = 1500  # a few periods: writes and flushes wrap the rings

source = st.sampled_from(SOURCES)
write = st.tuples(st.just("write"), source, st.integers(1, 1400), st.floats(0.05, 1.0))
action = st.one_of(
    write,  # three times as likely as each request: flushes and the limiter need audio queued
    write,
    write,
    st.tuples(st.just("gain"), source, st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.4])),
    st.tuples(st.just("duck"), source, st.booleans()),
    st.tuples(st.just("pause"), source, st.booleans()),
    st.tuples(st.just("flush"), source, st.floats(0.0, 1.2)),
    st.tuples(st.just("barge-in"), source, st.floats(0.0, 1.2)),  # audio queued, then a flush
    st.tuples(st.just("master"), st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0])),
    st.tuples(st.just("gate")),
    st.tuples(st.just("earcon"), st.integers(1, 700)),  # play_earcon(before_speech=True)
)
script = st.lists(st.lists(action, max_size=3), min_size=1, max_size=60)


def make(oracle: bool) -> tuple[Mixer, dict[SourceName, SampleRing]]:
    rings = {name: SampleRing(CAPACITY, name=name) for name in SOURCES}
    mixer = (NumpyMixer if oracle else Mixer)(
        rings,
        period_samples=N,
        rate_hz=RATE,
        duck_attack_ms=30.0,  # a few periods: ramps start and end inside a script
        duck_release_ms=60.0,
    )
    return mixer, rings


def apply(
    mixer: Mixer, rings: dict[SourceName, SampleRing], step: tuple[Any, ...], seed: int
) -> None:
    """One scripted request, the same on both mixers (asyncio's side)."""
    kind = step[0]
    if kind == "write":
        _, name, count, level = step
        rng = np.random.default_rng(seed)
        rings[name].write((rng.uniform(-level, level, count) * 32767).astype(np.int16))
    elif kind == "gain":
        mixer.channels[step[1]].req_gain = step[2]
    elif kind == "duck":
        mixer.channels[step[1]].req_ducked = step[2]
    elif kind == "pause":
        mixer.channels[step[1]].req_paused = step[2]
    elif kind == "barge-in":
        apply(mixer, rings, ("write", step[1], 1000, 0.5), seed)
        apply(mixer, rings, ("flush", step[1], step[2]), seed)
    elif kind == "flush":
        channel, ring = mixer.channels[step[1]], rings[step[1]]
        channel.req_flush_to = ring.read_pos + int(step[2] * ring.available())
        channel.req_flush_seq += 1
    elif kind == "master":
        mixer.req_master_gain = step[1]
    else:  # the gate alone, or play_earcon(before_speech=True): an earcon, then its gate
        if kind == "earcon":
            apply(mixer, rings, ("write", "earcon", step[1], 0.5), seed)
        seq = mixer.req_gate[0] + 1
        mixer.req_gate = (seq, rings["earcon"].write_pos, rings["speech"].write_pos)


def observe(mixer: Mixer) -> list[Any]:
    """Everything the engine reads from the mixer after a period."""
    seen: list[Any] = [mixer.limiter.gain, mixer.limiter.active_periods, mixer.idle()]
    for name in SOURCES:
        c = mixer.channels[name]
        seen += [name, c.ring.read_pos, c.pull_start, c.pull_offset, c.pull_count]
        seen += [c.dry_count, c.skip_from, c.skip_to, c.paused, c.duck_db]
        seen += [c.playout.skips.since(0)]
    return seen


@settings(max_examples=150, deadline=None)
@given(steps=script, seed=st.integers(0, 2**16))
# a flush whose target is one sample past its fade-out: the smallest skip there is
@example(steps=[[("write", "speech", 500, 0.5)], [("flush", "speech", 121.5 / 260)], []], seed=0)
def test_the_c_core_mixes_as_the_numpy_reference(steps: list[list[Any]], seed: int) -> None:
    fast, fast_rings = make(oracle=False)
    ref, ref_rings = make(oracle=True)
    assert type(fast) is Mixer and isinstance(ref, NumpyMixer)  # both paths really run
    a = np.zeros(N, dtype=np.float32)
    b = np.zeros(N, dtype=np.float32)
    for period, requests in enumerate(steps):
        for k, step in enumerate(requests):
            apply(fast, fast_rings, step, seed + 31 * period + k)
            apply(ref, ref_rings, step, seed + 31 * period + k)
        fast.mix(a)
        ref.mix(b)
        np.testing.assert_allclose(a, b, rtol=0, atol=4e-7, err_msg=f"period {period}")
        assert observe(fast) == observe(ref), f"period {period}"


def test_a_ring_that_is_not_its_channels_is_refused_by_name() -> None:
    """The binding checks what it reads before the core indexes with it: a channel's
    ring positions that do not fit its ring raise a ValueError naming the source,
    and nothing was mixed or moved."""
    mixer, rings = make(oracle=False)
    rings["speech"].write(np.full(100, 1000, dtype=np.int16))
    rings["speech"].read_pos = 200  # past what was written: not a ring
    out = np.ones(N, dtype=np.float32)
    with pytest.raises(ValueError, match="source 1 has read_pos 200, write_pos 100"):
        mixer.mix(out)
    assert np.all(out == 1.0) and rings["speech"].read_pos == 200


def test_a_request_of_the_wrong_kind_is_refused_by_name() -> None:
    mixer, _ = make(oracle=False)
    mixer.channels["content"].req_flush_seq = -1
    with pytest.raises(ValueError, match=r"SourceChannel\._req_flush_seq must be a whole number"):
        mixer.mix(np.zeros(N, dtype=np.float32))
