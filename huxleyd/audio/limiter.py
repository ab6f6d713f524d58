"""The output soft limiter: four loud sources never wrap and never click.

Two stages, both allocation-free on preallocated buffers:

1. A block gain stage. Each period its peak is measured; if it would exceed
   the threshold the gain falls to fit, over the first millisecond of that
   same period (a linear ramp from the previous gain, so no click), and it
   recovers at ``release_db_per_s``, ramped across each period.
2. A soft clipper for what the ramp could not catch (a transient in that
   first millisecond): samples above the threshold are bent smoothly towards
   a ceiling just under full scale with ``tanh`` and can never pass it.

Below the threshold both stages are exact no-ops (gain 1, no clipping).

The C kernel (:mod:`huxleyd.audio.dsp`) runs both stages in one call; the numpy
code is the reference (same to float32 rounding, except ``tanh``: the C
library's and numpy's differ by an ulp or so).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from huxleyd.audio.dsp import KERNEL
from huxleyd.pcm import Float32Array


class SoftLimiter:
    """Keeps a float32 period within (-1, 1) while staying transparent below ``threshold``."""

    def __init__(
        self,
        period_samples: int,
        *,
        rate_hz: int,
        threshold: float = 0.891,
        ceiling: float = 0.9995,
        release_db_per_s: float = 20.0,
        attack_ms: float = 1.0,
        kernel: ModuleType | None = KERNEL,
    ) -> None:
        self._kernel = kernel
        if not 0.0 < threshold < ceiling < 1.0:
            raise ValueError(
                f"limiter needs 0 < threshold < ceiling < 1, got {threshold} and {ceiling}"
            )
        self.threshold = threshold
        self.gain = 1.0
        """The current block gain (1.0 when nothing is being limited)."""
        self.active_periods = 0
        """Periods in which either stage changed the signal."""
        period_s = period_samples / rate_hz
        self._release_step = 10.0 ** (release_db_per_s * period_s / 20.0)
        self._knee = ceiling - threshold
        self._abs: Float32Array = np.zeros(period_samples, dtype=np.float32)
        self._bend: Float32Array = np.zeros(period_samples, dtype=np.float32)
        self._ramp: Float32Array = np.zeros(period_samples, dtype=np.float32)
        steps = np.arange(1, period_samples + 1, dtype=np.float32)
        self._unit: Float32Array = steps / np.float32(period_samples)
        attack = max(1, min(period_samples, round(attack_ms * rate_hz / 1000.0)))
        self.attack: Float32Array = np.minimum(steps / np.float32(attack), np.float32(1.0))
        """The gain's fall over ``attack_ms`` (read by the C mixer core too)."""

    def process(self, mix: Float32Array) -> None:
        """Limit ``mix`` in place."""
        if self._kernel is not None:
            self.gain, active = self._kernel.limit(
                mix,
                self.gain,
                self.threshold,
                self._release_step,
                self._knee,
                self.attack,
                self._unit,
            )
            self.active_periods += active
            return
        np.abs(mix, out=self._abs)
        peak = float(self._abs.max())
        start = self.gain
        target = 1.0 if peak <= self.threshold else self.threshold / peak
        end = target if target < start else min(target, start * self._release_step, 1.0)
        if start != 1.0 or end != 1.0:
            self.active_periods += 1
            shape = self.attack if end < start else self._unit
            np.multiply(shape, np.float32(end - start), out=self._ramp)
            self._ramp += np.float32(start)
            np.multiply(mix, self._ramp, out=mix)
            peak *= max(start, end)
        self.gain = end
        if peak > self.threshold:
            if start == 1.0 and end == 1.0:
                self.active_periods += 1
            self._soft_clip(mix)

    def _soft_clip(self, mix: Float32Array) -> None:
        excess, bent = self._abs, self._bend
        np.abs(mix, out=excess)
        np.subtract(excess, np.float32(self.threshold), out=excess)
        np.maximum(excess, np.float32(0.0), out=excess)
        # bent = knee * tanh(excess / knee): same slope at the threshold, asymptote = ceiling
        np.multiply(excess, np.float32(1.0 / self._knee), out=bent)
        np.tanh(bent, out=bent)
        np.multiply(bent, np.float32(self._knee), out=bent)
        np.subtract(excess, bent, out=excess)  # how much to pull each sample in
        np.copysign(excess, mix, out=excess)
        np.subtract(mix, excess, out=mix)
