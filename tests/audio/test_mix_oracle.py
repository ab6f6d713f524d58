"""The one mixer, sample for sample: the C core (what the daemon runs on every backend
that plays) against the numpy oracle (``tests/oracles/numpy_mixer.py``).

400 seeded scenes (``numpy.random.default_rng(case)``: a failure names its case, and
the case replays alone), each 40 periods of a mixer whose period, fade and duck ramps
are drawn too. A scene is a story the daemon lives: sources start and stop (replies,
media, calls, with gaps between their chunks: the dry count), ducking and unducking,
volume (each source's gain and the master gain), barge-in (audio queued, then a flush
to somewhere in it), earcons before speech (the gate), pause and resume, and loud
mixes the limiter must bend.

The tolerance: bit for bit (``array_equal``) in every period where neither limiter
acted; where the limiter bent the signal, 4e-7 absolute (about 3 float32 ulps at full
scale), because the C core's ``tanh`` (libm) and numpy's may differ by an ulp before
the last multiply, and the two limiters' gains then differ by as little. Every field
the rest of the engine reads after a period (pull positions, dry counts, what a flush
dropped and its playout record, pause and duck state, the limiter's gain and count, the
idle test) must be equal, exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SOURCES, SourceName
from tests.oracles.numpy_mixer import NumpyMixer

RATE = 24000
CAPACITY = 3000  # a few periods: writes and flushes wrap the rings
CASES = 400
PERIODS = 40
LIMITER_ATOL = 4e-7

Event = tuple[Any, ...]


def scene(case: int) -> tuple[dict[str, Any], list[list[Event]]]:
    """The mixer's shape and each period's events for one case."""
    rng = np.random.default_rng(case)
    shape = {
        "period_samples": int(rng.choice([120, 240, 480])),
        "ramp_ms": float(rng.choice([5.0, 7.5, 10.0])),
        "duck_depth_db": float(rng.choice([-6.0, -12.0, -24.0])),
        "duck_attack_ms": float(rng.uniform(10.0, 120.0)),
        "duck_release_ms": float(rng.uniform(20.0, 400.0)),
    }
    level = float(rng.choice([0.2, 0.5, 0.9]))  # 0.9: four sources together need the limiter
    periods: list[list[Event]] = [[] for _ in range(PERIODS)]
    # sources start and stop: bursts of chunks with gaps, each source its own rhythm
    for name in SOURCES:
        if name == "earcon" or rng.random() < 0.3:
            continue
        at = int(rng.integers(0, PERIODS // 2))
        while at < PERIODS:
            for _ in range(int(rng.integers(1, 6))):  # a reply's chunks, a period apart
                if at < PERIODS:
                    periods[at].append(("write", name, int(rng.integers(60, 900)), level))
                at += int(rng.integers(1, 3))
            at += int(rng.integers(2, 12))  # then silence: the source ran dry
    for _ in range(int(rng.integers(0, 6))):  # requests, anywhere
        at = int(rng.integers(0, PERIODS))
        name = SOURCES[int(rng.integers(0, len(SOURCES)))]
        kind = int(rng.integers(0, 6))
        if kind == 0:
            periods[at].append(("duck", name, bool(rng.random() < 0.7)))
        elif kind == 1:
            periods[at].append(("gain", name, float(rng.choice([0.0, 0.3, 0.7, 1.0, 1.5]))))
        elif kind == 2:
            periods[at].append(("master", float(rng.choice([0.0, 0.25, 0.6, 1.0, 2.0]))))
        elif kind == 3:  # barge-in: audio queued, cut somewhere in it
            periods[at].append(("write", name, int(rng.integers(200, 1500)), level))
            periods[at].append(("flush", name, float(rng.uniform(0.0, 1.1))))
        elif kind == 4:
            periods[at].append(("earcon", int(rng.integers(30, 700)), level))
        else:  # pause, resumed a few periods later
            periods[at].append(("pause", name, True))
            back = at + int(rng.integers(1, 6))
            if back < PERIODS:
                periods[back].append(("pause", name, False))
    return shape, periods


def apply(mixer: Mixer, rings: dict[SourceName, SampleRing], event: Event, seed: int) -> None:
    """One event, the same on both mixers (asyncio's side of the request fields)."""
    kind = event[0]
    if kind == "write":
        _, name, count, level = event
        samples = np.random.default_rng(seed).uniform(-level, level, count) * 32767
        rings[name].write(samples.astype(np.int16))
    elif kind == "duck":
        mixer.channels[event[1]].req_ducked = event[2]
    elif kind == "gain":
        mixer.channels[event[1]].req_gain = event[2]
    elif kind == "pause":
        mixer.channels[event[1]].req_paused = event[2]
    elif kind == "master":
        mixer.req_master_gain = event[1]
    elif kind == "flush":
        channel, ring = mixer.channels[event[1]], rings[event[1]]
        channel.req_flush_to = ring.read_pos + int(event[2] * ring.available())
        channel.req_flush_seq += 1
    else:  # play_earcon(before_speech=True): the earcon, then its gate
        apply(mixer, rings, ("write", "earcon", event[1], event[2]), seed)
        seq = mixer.req_gate[0] + 1
        mixer.req_gate = (seq, rings["earcon"].write_pos, rings["speech"].write_pos)


def observe(mixer: Mixer) -> list[Any]:
    """Everything the engine reads from the mixer after a period."""
    seen: list[Any] = [mixer.limiter.gain, mixer.limiter.active_periods, mixer.idle()]
    seen.append(mixer.holding())
    for name in SOURCES:
        c = mixer.channels[name]
        seen += [name, c.ring.read_pos, c.pull_start, c.pull_offset, c.pull_count]
        seen += [c.dry_count, c.skip_from, c.skip_to, c.paused, c.duck_db]
        seen += [c.playout.skips.since(0)]
    return seen


def build(oracle: bool, shape: dict[str, Any]) -> tuple[Mixer, dict[SourceName, SampleRing]]:
    rings = {name: SampleRing(CAPACITY, name=name) for name in SOURCES}
    return (NumpyMixer if oracle else Mixer)(rings, rate_hz=RATE, **shape), rings


def play(case: int) -> tuple[int, int]:
    """Run one scene on both mixers, compare every period; (exact periods, limited)."""
    shape, periods = scene(case)
    c_mix, c_rings = build(False, shape)
    ref, ref_rings = build(True, shape)
    n = shape["period_samples"]
    a, b = np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
    exact = limited = 0
    for period, events in enumerate(periods):
        for k, event in enumerate(events):
            seed = case * 10_000 + period * 31 + k
            apply(c_mix, c_rings, event, seed)
            apply(ref, ref_rings, event, seed)
        before = ref.limiter.active_periods
        c_mix.mix(a)
        ref.mix(b)
        where = f"case {case}, period {period}"
        bent = ref.limiter.active_periods != before or ref.limiter.gain != 1.0
        if bent:
            limited += 1
            np.testing.assert_allclose(a, b, rtol=0, atol=LIMITER_ATOL, err_msg=where)
        else:
            exact += 1
            assert np.array_equal(a, b), f"{where}: {np.abs(a - b).max()} apart, no limiter"
        assert observe(c_mix) == observe(ref), where
    return exact, limited


def test_the_c_mix_is_the_oracle_sample_for_sample() -> None:
    exact = limited = 0
    for case in range(CASES):
        e, lim = play(case)
        exact, limited = exact + e, limited + lim
    # the scenes reach what they claim: most periods exact, some through the limiter
    assert exact > CASES * PERIODS // 2 and limited > 100, (exact, limited)


@pytest.mark.parametrize("case", [0, 1])
def test_a_scene_replays_alone(case: int) -> None:
    """A case is its seed: run twice, the same mix (so a failing case can be rerun)."""
    assert scene(case) == scene(case)
    assert play(case) == play(case)
