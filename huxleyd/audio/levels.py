"""Peak and RMS meters for ``huxleyctl levels`` (updated by the audio thread, read anywhere)."""

from __future__ import annotations

import math

import numpy as np

from huxleyd.pcm import Float32Array, amplitude_to_dbfs


class LevelMeter:
    """Peak with a 20 dB/s fall and RMS averaged over ~300 ms, both linear.

    :meth:`update` allocates nothing (two reductions and a dot product);
    the dBFS properties are for the reader's side.
    """

    def __init__(self, period_s: float, *, rms_window_s: float = 0.3, fall_db_per_s: float = 20.0):
        self._fall = math.pow(10.0, -fall_db_per_s * period_s / 20.0)
        self._alpha = 1.0 - math.exp(-period_s / rms_window_s)
        self.peak = 0.0
        self.power = 0.0

    def update(self, block: Float32Array) -> None:
        high = float(block.max())
        low = float(block.min())
        peak = high if high > -low else -low
        self.record(peak, float(np.dot(block, block)) / block.shape[0])

    def record(self, peak: float, power: float) -> None:
        """:meth:`update` from a block's peak and mean power (the C kernel measures them)."""
        fallen = self.peak * self._fall
        self.peak = peak if peak > fallen else fallen
        self.power += self._alpha * (power - self.power)

    def update_silent(self) -> None:
        """:meth:`update` for a block of zeros, without looking at one (the idle path)."""
        self.peak *= self._fall
        self.power -= self._alpha * self.power

    def decay(self, periods: int) -> None:
        """Fall and average as over ``periods`` periods unseen (the idle thread slept)."""
        if periods > 0:
            self.peak *= self._fall**periods
            self.power *= (1.0 - self._alpha) ** periods

    @property
    def peak_dbfs(self) -> float:
        return amplitude_to_dbfs(self.peak)

    @property
    def rms_dbfs(self) -> float:
        return amplitude_to_dbfs(math.sqrt(max(self.power, 0.0)))
