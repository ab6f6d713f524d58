"""The C feeder's Python-free pieces against the Python engine, on generated scripts.

The feeder (``_feedthread.c``) mixes with the same core as :class:`~huxleyd.audio.mixer.Mixer`
(``tests/audio/test_mix_oracle.py`` compares that core with the numpy oracle). What is its own, and
checked here against the Python it stands in for:

- its idle test and holding mask (what it tells the callback as ``expect``, and when it
  stops mixing) against :meth:`Mixer.idle` and :meth:`Mixer.holding`;
- the source rings in C (:class:`SharedSampleRing`): the Python mix over them (it runs
  while the device is lost) is the Python mix over :class:`SampleRing`;
- the hand-over: ``Mixer.core_state`` then ``Mixer.restore_core_state`` (device open, close)
  carries every field the mixer reads on.

The feeder thread itself (its loop, cuts, reports) runs on the clocked card:
``tests/audio/test_clockcard.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing, SharedSampleRing
from huxleyd.audio.types import SOURCES, SourceName
from tests.audio.test_mixcore import CAPACITY, RATE, N, apply, observe, script

rtout = pytest.importorskip("huxleyd.audio._rt")
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the C kernel is not built here")


def make(*, shared: bool) -> tuple[Mixer, dict[SourceName, SampleRing]]:
    rings: dict[SourceName, SampleRing] = {
        name: SharedSampleRing(rtout.SourceRing(CAPACITY), name=name)
        if shared
        else SampleRing(CAPACITY, name=name)
        for name in SOURCES
    }
    return mixer_on(rings), rings


def mixer_on(rings: dict[SourceName, SampleRing]) -> Mixer:
    """The mixer every test here runs: one period of N samples, the same duck ramps."""
    return Mixer(
        rings,
        period_samples=N,
        rate_hz=RATE,
        duck_attack_ms=30.0,
        duck_release_ms=60.0,
        kernel=KERNEL,
    )


def feeder_view(mixer: Mixer) -> tuple[int, bool]:
    """What the feeder would decide on this mixer's state: (expect mask, idle)."""
    assert KERNEL is not None
    bits = tuple(1 << SOURCES.index(name) for name in KERNEL.SOURCE_ORDER)
    mask, idle = rtout._mixer_holding(mixer.core_state(), bits)
    return int(mask), bool(idle)


@settings(max_examples=100, deadline=None)
@given(steps=script, seed=st.integers(0, 2**16))
def test_the_feeders_idle_test_and_holding_mask_are_the_mixers(
    steps: list[list[Any]], seed: int
) -> None:
    mixer, rings = make(shared=False)
    out = np.zeros(N, dtype=np.float32)
    for period, requests in enumerate(steps):
        for k, step in enumerate(requests):
            apply(mixer, rings, step, seed + 31 * period + k)
            # asked both before the mix (requests pending) and after it (ramps running)
            assert feeder_view(mixer) == (mixer.holding(), mixer.idle()), f"period {period}"
        mixer.mix(out)
        assert feeder_view(mixer) == (mixer.holding(), mixer.idle()), f"period {period}"


@settings(max_examples=60, deadline=None)
@given(steps=script, seed=st.integers(0, 2**16))
def test_the_python_mix_over_rings_in_c_is_the_python_mix(
    steps: list[list[Any]], seed: int
) -> None:
    shared, shared_rings = make(shared=True)
    plain, plain_rings = make(shared=False)
    a = np.zeros(N, dtype=np.float32)
    b = np.zeros(N, dtype=np.float32)
    for period, requests in enumerate(steps):
        for k, step in enumerate(requests):
            apply(shared, shared_rings, step, seed + 31 * period + k)
            apply(plain, plain_rings, step, seed + 31 * period + k)
        shared.mix(a)
        plain.mix(b)
        assert np.array_equal(a, b), f"period {period}"
        assert observe(shared) == observe(plain), f"period {period}"


@settings(max_examples=60, deadline=None)
@given(steps=script, seed=st.integers(0, 2**16))
def test_the_hand_over_carries_the_whole_mixer_state(steps: list[list[Any]], seed: int) -> None:
    """A mixer's state, taken (device open) and restored into a fresh mixer over the same
    rings (device close): the fresh mixer then holds every field the core reads."""
    assert KERNEL is not None
    mixer, rings = make(shared=True)
    out = np.zeros(N, dtype=np.float32)
    for period, requests in enumerate(steps):
        for k, step in enumerate(requests):
            apply(mixer, rings, step, seed + 31 * period + k)
        mixer.mix(out)
    state = mixer.core_state()
    twin = mixer_on(rings)
    for name in SOURCES:  # requests are asyncio's: the twin is asked the same
        ours, theirs = mixer.channels[name], twin.channels[name]
        theirs._req_gain, theirs._req_ducked = ours.req_gain, ours.req_ducked
        theirs._req_paused, theirs._req_flush_seq = ours.req_paused, ours.req_flush_seq
        theirs.req_flush_to = ours.req_flush_to
    twin._req_master_gain, twin._req_gate = mixer.req_master_gain, mixer.req_gate
    twin.restore_core_state(state)
    # every field the core reads, requests, state and positions, is the original's
    assert twin.core_state() == state


@pytest.mark.parametrize(
    ("target", "low_water", "expected"),
    [
        (300.0, None, 225.0),  # nothing fed in pieces: a quarter less
        (300.0, 200.0, 225.0),  # a 100 ms dip: 150 is under a quarter less
        (300.0, 89.0, 300.0),  # a 211 ms dip: 1.5x is over the target, it stays
        (300.0, 150.0, 225.0),  # a 150 ms dip: 1.5x is 225 exactly
        (300.0, 140.0, 240.0),  # a 160 ms dip: 240, between
        (300.0, 0.0, 300.0),  # ran to the last sample: stays
        (50.0, None, 40.0),  # never under the floor
        (40.0, None, 40.0),
    ],
)
def test_the_playout_buffer_shrinks_only_into_the_margin_its_feed_left(
    target: float, low_water: float | None, expected: float
) -> None:
    """``feeder_hold_shrunk``: after a calm stretch, at most a quarter less, never
    under 1.5 times the deepest dip the stretch saw (the grow's own factor), nor
    under the floor (40 ms); the clocked card runs it on a real feed
    (``test_the_playout_buffer_shrinks_in_calm_only_into_the_margin_the_feed_left``)."""
    assert rtout._hold_shrunk(target, low_water, 40.0) == pytest.approx(expected, abs=1e-6)


@settings(max_examples=300, deadline=None)
@given(
    target=st.floats(40.0, 500.0),
    low_water=st.one_of(st.none(), st.floats(-10.0, 600.0)),
)
def test_a_shrink_never_grows_and_keeps_the_cover_it_needed(
    target: float, low_water: float | None
) -> None:
    after = rtout._hold_shrunk(target, low_water, 40.0)
    assert after <= target + 1e-6
    assert after >= min(target, 40.0) - 1e-6 and after >= 0.75 * target - 1e-3
    if low_water is not None and low_water < target:
        dip = target - max(low_water, 0.0)
        assert after >= min(target, 1.5 * dip) - 1e-3
