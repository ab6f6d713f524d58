"""C reads no Python attribute: the mixer's fields cross into the C core as one packed
struct (``huxleyd/audio/corestate.py``), laid out by the extension's own ``offsetof``.

- every core field has exactly one attribute, and the table names no field C lacks;
- ``_dsp.mix_period`` takes the struct and buffers only: handed objects whose
  attributes it could once read (the mixer, its channels), it refuses them;
- a struct packed from one mixer and unpacked into another carries every field
  (what the C feeder takes at open and gives back at close);
- a field that cannot be the core's type is refused by its attribute's name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from huxleyd.audio import _dsp
from huxleyd.audio.corestate import MIXER_ATTRS, SOURCE_ATTRS, CoreState
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SOURCES

N = 240


def make() -> Mixer:
    rings = {name: SampleRing(2000, name=name) for name in SOURCES}
    return Mixer(rings, period_samples=N, rate_hz=24000)


def test_every_core_field_is_one_attribute_and_the_layout_is_the_extensions() -> None:
    assert {name for name, _, _ in _dsp.MIXER_FIELDS} == set(MIXER_ATTRS)
    assert {name for name, _, _ in _dsp.SOURCE_FIELDS} == set(SOURCE_ATTRS)
    core = make().core
    assert core is not None and len(core.buffer) == _dsp.STATE_SIZE
    # a core field the table does not know is refused when the mixer is built, not zeroed
    stale: Any = type("Stale", (), {})()
    stale.MIXER_FIELDS = (*_dsp.MIXER_FIELDS, ("brand_new", 0, "Q"))
    stale.SOURCE_FIELDS, stale.SOURCE_OFFSETS = _dsp.SOURCE_FIELDS, _dsp.SOURCE_OFFSETS
    stale.SOURCE_ORDER, stale.STATE_SIZE = _dsp.SOURCE_ORDER, _dsp.STATE_SIZE
    with pytest.raises(ValueError, match=r"in C only \['brand_new'\]"):
        CoreState(stale, make())


def test_mix_period_takes_the_struct_not_the_python_objects() -> None:
    mixer = make()
    mixer.channels["speech"].ring.write(np.full(300, 8000, dtype=np.int16))
    unit, fade_out, fade_in = mixer.fades[2], mixer.fades[0], mixer.fades[1]
    by_name: dict[str, Any] = {str(name): c for name, c in mixer.channels.items()}
    rings = tuple(by_name[name].ring.samples for name in _dsp.SOURCE_ORDER)
    out = np.zeros(N, dtype=np.float32)
    with pytest.raises(TypeError):  # the mixer itself is no buffer: C reads nothing of it
        _dsp.mix_period(out, mixer, rings, unit, fade_out, fade_in, mixer.limiter.attack)  # type: ignore[arg-type]
    state = bytearray(mixer.core_state())
    _dsp.mix_period(out, state, rings, unit, fade_out, fade_in, mixer.limiter.attack)
    assert np.allclose(out, 8000 / 32768) and mixer.channels["speech"].pull_count == 0
    mixer.restore_core_state(bytes(state))  # the period's state and report, back by hand
    assert mixer.channels["speech"].pull_count == N
    assert mixer.channels["speech"].ring.read_pos == N


def test_a_struct_carries_every_field_from_one_mixer_to_another() -> None:
    one, two = make(), make()
    for name in SOURCES:
        one.channels[name].ring.write(np.arange(500, dtype=np.int16))
    one.channels["content"].req_ducked = True
    one.channels["comms"].req_paused = True
    one.req_master_gain = 0.5
    out = np.zeros(N, dtype=np.float32)
    for _ in range(3):
        one.mix(out)
    state = one.core_state()
    for name in SOURCES:  # the rings' contents are not the struct's: only their positions
        two.channels[name].ring.write(np.arange(500, dtype=np.int16))
        a, b = one.channels[name], two.channels[name]
        b._req_gain, b._req_ducked, b._req_paused = a.req_gain, a.req_ducked, a.req_paused
        b._req_flush_seq, b.req_flush_to = a.req_flush_seq, a.req_flush_to
    two._req_master_gain, two._req_gate = one.req_master_gain, one.req_gate
    two.restore_core_state(state)
    assert two.core_state() == state
    for name in SOURCES:
        a, b = one.channels[name], two.channels[name]
        assert (a.ring.read_pos, a.duck_db, a.paused, a.dry_count) == (
            b.ring.read_pos,
            b.duck_db,
            b.paused,
            b.dry_count,
        )


def test_a_field_of_the_wrong_kind_is_refused_by_its_name() -> None:
    mixer = make()
    mixer.channels["content"].req_flush_to = -5
    with pytest.raises(ValueError, match=r"SourceChannel\.req_flush_to must be a whole number"):
        mixer.mix(np.zeros(N, dtype=np.float32))
    with pytest.raises(ValueError, match="a core state is"):
        mixer.restore_core_state(b"short")
