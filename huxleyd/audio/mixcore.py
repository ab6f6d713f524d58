"""The Python side of the C mixer core (``_mixcore.c``, called through ``_dsp.mix_period``).

:class:`CoreMix` runs :meth:`Mixer.mix <huxleyd.audio.mixer.Mixer.mix>` as one C
call: each period it copies the requests (and each ring's write position) into the
kernel's state rows, lets the core mix the period (gains, duck ramps, transport
fades, the earcon gate, the master gain, the limiter), and copies the state and the
period's report (pull positions, what a flush dropped) back into the channels, so
the rest of the engine reads the same fields whichever path mixed.

So the mixing semantics exist once in C, beside the numpy reference in
:mod:`~huxleyd.audio.mixer` and :mod:`~huxleyd.audio.limiter` (the path where the
extension is not built), and tests/audio/test_mixcore.py compares the two on
generated request scripts. The rows' layout is the kernel's own
(``SOURCE_FIELDS``, ``MIXER_FIELDS``, ``SOURCE_ORDER``): no second list here, only
which Python attribute each field is.
"""

from __future__ import annotations

from operator import attrgetter
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from huxleyd.audio.pcm import Float32Array

if TYPE_CHECKING:
    from huxleyd.audio.mixer import Mixer, SourceChannel

_SOURCE_ATTRS = {
    "capacity": "ring.capacity",
    "read_pos": "ring.read_pos",
    "write_pos": "ring.write_pos",
    "req_gain": "req_gain",
    "req_ducked": "req_ducked",
    "req_paused": "req_paused",
    "req_flush_seq": "req_flush_seq",
    "req_flush_to": "req_flush_to",
    "gain": "_gain",
    "duck_db": "_duck_db",
    "paused": "_paused",
    "flowing": "_flowing",
    "flush_seq": "_flush_seq",
    "pull_start": "pull_start",
    "pull_offset": "pull_offset",
    "pull_count": "pull_count",
    "dry_count": "dry_count",
    "skip_from": "skip_from",
    "skip_to": "skip_to",
}
"""Each source field of the kernel's row → the SourceChannel attribute it mirrors."""

_MIXER_STATE = (
    "req_master",
    "req_gate_seq",
    "req_gate_earcon_end",
    "req_gate_speech_pos",
    "master",
    "gate_seq",
    "gate_earcon_end",
    "gate_speech_pos",
    "gate_active",
    "limiter_gain",
    "limiter_active",
)
"""The mixer row's fields that change per period (the rest is configuration, set once)."""


def _index(fields: tuple[str, ...], wanted: tuple[str, ...] | set[str], what: str) -> list[int]:
    """Where each wanted field is in the kernel's row; a clear error if the layouts differ."""
    missing = sorted(set(wanted) - set(fields))
    extra = sorted(set(fields) - set(wanted)) if isinstance(wanted, set) else []
    if missing or extra:
        raise RuntimeError(
            f"_dsp.{what} does not match huxleyd.audio.mixcore: missing {missing}, "
            f"unknown {extra} (rebuild the extension: pip install -e .)"
        )
    return [fields.index(name) for name in wanted]


class CoreMix:
    """One :class:`Mixer`'s period, mixed by the C core."""

    def __init__(self, kernel: ModuleType, mixer: Mixer) -> None:
        self._kernel = kernel
        self._mixer = mixer
        channels = mixer.channels
        self._channels: tuple[SourceChannel, ...] = tuple(
            channels[name] for name in kernel.SOURCE_ORDER
        )
        self._rings = tuple(channel.ring.samples for channel in self._channels)
        fields: tuple[str, ...] = kernel.SOURCE_FIELDS
        _index(fields, set(_SOURCE_ATTRS), "SOURCE_FIELDS")
        self._get = attrgetter(*(_SOURCE_ATTRS[name] for name in fields))
        self._rows = np.zeros((len(self._channels), len(fields)), dtype=np.float64)
        (
            self._i_read,
            self._i_gain,
            self._i_duck,
            self._i_paused,
            self._i_flowing,
            self._i_flush,
            self._i_start,
            self._i_offset,
            self._i_count,
            self._i_dry,
            self._i_skip_from,
            self._i_skip_to,
        ) = _index(
            fields,
            (
                "read_pos",
                "gain",
                "duck_db",
                "paused",
                "flowing",
                "flush_seq",
                "pull_start",
                "pull_offset",
                "pull_count",
                "dry_count",
                "skip_from",
                "skip_to",
            ),
            "SOURCE_FIELDS",
        )
        mixer_fields: tuple[str, ...] = kernel.MIXER_FIELDS
        self._row: np.ndarray[Any, np.dtype[np.float64]] = np.zeros(
            len(mixer_fields), dtype=np.float64
        )
        config = self._config()
        _index(mixer_fields, set(config) | set(_MIXER_STATE), "MIXER_FIELDS")
        for name, value in config.items():
            self._row[mixer_fields.index(name)] = value
        self._state_at = _index(mixer_fields, _MIXER_STATE, "MIXER_FIELDS")
        fade_out, fade_in, unit = mixer._fades
        self._shapes = (unit, fade_out, fade_in, mixer.limiter._attack)

    def mix(self, out: Float32Array) -> None:
        """Mixer.mix, in C: requests in, one call, state and report back."""
        rows, get = self._rows, self._get
        for i, channel in enumerate(self._channels):
            rows[i] = get(channel)
        row = self._row
        row[self._state_at] = self._mixer_state()
        unit, fade_out, fade_in, attack = self._shapes
        self._kernel.mix_period(out, self._rings, rows, row, unit, fade_out, fade_in, attack)
        for i, channel in enumerate(self._channels):
            self._take_back(channel, rows[i].tolist())
        self._mixer_back(row[self._state_at].tolist())

    def _config(self) -> dict[str, float]:
        """The mixer row's fixed part."""
        mixer, limiter = self._mixer, self._mixer.limiter
        speech = mixer.channels["speech"]  # every channel has the same ramp and duck curve
        return {
            "period": mixer.period_samples,
            "ramp": speech._ramp,
            "depth_db": speech._depth_db,
            "attack_step_db": speech._attack_step_db,
            "release_step_db": speech._release_step_db,
            "threshold": limiter.threshold,
            "release_step": limiter._release_step,
            "knee": limiter._knee,
        }

    def _mixer_state(self) -> tuple[float, ...]:
        """The mixer row's changing part, in :data:`_MIXER_STATE`'s order."""
        mixer = self._mixer
        seq, earcon_end, speech_pos = mixer.req_gate
        return (
            mixer.req_master_gain,
            seq,
            earcon_end,
            speech_pos,
            mixer._master_gain,
            mixer._gate_seq,
            mixer._gate_earcon_end,
            mixer._gate_speech_pos,
            mixer._gate_active,
            mixer.limiter.gain,
            mixer.limiter.active_periods,
        )

    def _mixer_back(self, values: list[float]) -> None:
        """The core's mixer state back (the inverse of :meth:`_mixer_state`)."""
        mixer = self._mixer
        mixer._master_gain = values[4]
        mixer._gate_seq = int(values[5])
        mixer._gate_earcon_end = int(values[6])
        mixer._gate_speech_pos = int(values[7])
        mixer._gate_active = values[8] != 0.0
        mixer.limiter.gain = values[9]
        mixer.limiter.active_periods = int(values[10])

    def _take_back(self, channel: SourceChannel, values: list[float]) -> None:
        """The core's state and report of one source, into its channel."""
        channel._gain = values[self._i_gain]
        channel._duck_db = values[self._i_duck]
        channel._paused = values[self._i_paused] != 0.0
        channel._flowing = values[self._i_flowing] != 0.0
        channel._flush_seq = int(values[self._i_flush])
        channel.pull_start = int(values[self._i_start])
        channel.pull_offset = int(values[self._i_offset])
        channel.pull_count = int(values[self._i_count])
        channel.dry_count = int(values[self._i_dry])
        channel.ring.read_pos = int(values[self._i_read])  # publish after the core read
        skip_from, skip_to = int(values[self._i_skip_from]), int(values[self._i_skip_to])
        channel.skip_from, channel.skip_to = skip_from, skip_to
        if skip_to > skip_from:  # a flush dropped queued samples: never heard
            channel.playout.skips.record(skip_from, skip_to)
