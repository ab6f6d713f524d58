"""The Python side of the C mixer core (``_mixcore.c``, called through ``_dsp.mix_period``).

:class:`CoreMix` runs :meth:`Mixer.mix <huxleyd.audio.mixer.Mixer.mix>` as one C
call. ``_dsp.mix_period`` reads the requests (the Request descriptors' slots), the
state and the rings' positions from the Mixer and its SourceChannels, lets the core
mix the period (gains, duck ramps, transport fades, the earcon gate, the master
gain, the limiter), and writes the state and the period's report (pull positions,
dry counts, what a flush dropped) back into the same attributes, so the rest of
the engine reads the same fields whichever path mixed. Which attribute each core
field is, is listed once, in ``_dsp.c``'s tables.

So the mixing semantics exist once in C, beside the numpy reference in
:mod:`~huxleyd.audio.mixer` and :mod:`~huxleyd.audio.limiter` (the path where the
extension is not built), and tests/audio/test_mixcore.py compares the two on
scripts Hypothesis generates.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from huxleyd.audio.pcm import Float32Array

if TYPE_CHECKING:
    from huxleyd.audio.mixer import Mixer


class CoreMix:
    """One :class:`Mixer`'s period, mixed by the C core."""

    def __init__(self, kernel: ModuleType, mixer: Mixer) -> None:
        self._mix_period = kernel.mix_period
        self._mixer = mixer
        channels = tuple(mixer.channels[name] for name in kernel.SOURCE_ORDER)
        self._channels = channels
        self._rings = tuple(channel.ring.samples for channel in channels)
        fade_out, fade_in, unit = mixer.fades
        self._shapes = (unit, fade_out, fade_in, mixer.limiter.attack)

    def mix(self, out: Float32Array) -> None:
        """Mixer.mix, in C: requests and state in, one call, state and report back."""
        unit, fade_out, fade_in, attack = self._shapes
        self._mix_period(
            out, self._channels, self._mixer, self._rings, unit, fade_out, fade_in, attack
        )
