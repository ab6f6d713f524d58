"""A streaming polyphase resampler: fixed blocks in, fixed blocks out, state kept.

The same filter as ``scipy.signal.resample_poly`` (a Kaiser-windowed
low-pass, cutoff at the lower Nyquist, ``10 * max(up, down)`` half-length
at the upsampled rate), applied block by block. The tail of each input block
is carried into the next, so splitting a signal into periods changes nothing:
the output equals resampling the whole signal at once (no edge artefacts at
period boundaries), delayed by :attr:`StreamResampler.delay_in` input samples.

Everything is precomputed in ``__init__``: for each of the ``block_out``
output samples the input indices and filter taps it needs. :meth:`process`
is then one ``take``, a multiply, a row sum and one copy into preallocated arrays;
it allocates nothing, so the audio thread can call it every period. With the C
kernel (:mod:`huxleyd.audio.dsp`) it is one call with the GIL held, the same
products summed in numpy's pairwise order: bit-identical output.
"""

from __future__ import annotations

from math import gcd
from types import ModuleType

import numpy as np
import numpy.typing as npt

from huxleyd.audio.dsp import KERNEL
from huxleyd.pcm import Float32Array

_KAISER_BETA = 5.0
_HALF_LEN_PER_RATIO = 10


def design_filter(up: int, down: int, band: float = 1.0) -> npt.NDArray[np.float64]:
    """The polyphase low-pass ``resample_poly`` would use, gain ``up``.

    ``scipy.signal.firwin(n, 1/max_rate, window=("kaiser", 5.0))`` written
    out in numpy (a windowed sinc scaled to unit DC gain): importing
    scipy.signal costs the daemon about 80 MB and a second on a Pi.

    ``band``: the cutoff as a fraction of the lower rate's Nyquist frequency.
    At 1 (``resample_poly``'s) the filter is down 6 dB only *at* that Nyquist
    frequency, so what lies just above it folds back into the top of the band
    (see :class:`StreamResampler`).
    """
    max_rate = max(up, down)
    half_len = _HALF_LEN_PER_RATIO * max_rate
    offsets = np.arange(-half_len, half_len + 1, dtype=np.float64)
    cutoff = band / max_rate  # of the Nyquist frequency
    taps = cutoff * np.sinc(cutoff * offsets) * np.kaiser(len(offsets), _KAISER_BETA)
    taps /= taps.sum()
    return taps * up


class StreamResampler:
    """Resamples ``block_in`` samples at ``in_rate_hz`` to ``block_out`` at ``out_rate_hz``.

    ``block_in * out_rate_hz`` must be a multiple of ``in_rate_hz`` (true for
    one period of any whole-millisecond length at common rates); equal rates
    make it a plain copy with no delay.

    ``band`` (:func:`design_filter`): below 1, the top of the band is given up
    to keep what lies above the output's Nyquist frequency from folding into
    it. An echo canceller needs that: the folded part of the mic came through
    the room at another frequency than the one it lands on, which no filter
    from the far end can model.
    """

    def __init__(
        self,
        in_rate_hz: int,
        out_rate_hz: int,
        block_in: int,
        *,
        kernel: ModuleType | None = KERNEL,
        band: float = 1.0,
    ) -> None:
        self.kernel = kernel
        if not 0.5 <= band <= 1.0:
            raise ValueError(
                f"resampler band must be 0.5 to 1 of the Nyquist frequency, got {band}"
            )
        if in_rate_hz <= 0 or out_rate_hz <= 0 or block_in <= 0:
            raise ValueError(
                f"resampler needs positive rates and block, got {in_rate_hz} → {out_rate_hz} Hz, "
                f"block {block_in}"
            )
        block_out, rest = divmod(block_in * out_rate_hz, in_rate_hz)
        if rest:
            raise ValueError(
                f"a block of {block_in} samples at {in_rate_hz} Hz is not a whole number "
                f"of samples at {out_rate_hz} Hz"
            )
        self.in_rate_hz = in_rate_hz
        self.out_rate_hz = out_rate_hz
        self.block_in = block_in
        self.block_out = block_out
        divisor = gcd(in_rate_hz, out_rate_hz)
        self.up = out_rate_hz // divisor
        self.down = in_rate_hz // divisor
        self.identity = self.up == self.down
        if self.identity:
            self.delay_in = 0.0
            self._history = 0
            return
        taps = design_filter(self.up, self.down, band)
        self.delay_in = (len(taps) - 1) / 2 / self.up
        """Group delay, in input samples (half the filter)."""
        self._build(taps)

    def _build(self, taps: npt.NDArray[np.float64]) -> None:
        up, down = self.up, self.down
        per_phase = -(-len(taps) // up)
        padded = np.zeros(per_phase * up)
        padded[: len(taps)] = taps
        self._history = per_phase - 1
        # output j sits at upsampled index j*down; its newest input is floor(j*down/up),
        # and tap t of its phase is padded[(j*down) % up + t*up], applied to newest - t.
        position = np.arange(self.block_out) * down
        newest = position // up
        phase = position % up
        t = np.arange(per_phase)
        self._index = (newest[:, None] - t[None, :] + self._history).astype(np.intp)
        self._taps: Float32Array = padded[phase[:, None] + t[None, :] * up].astype(np.float32)
        self._ext: Float32Array = np.zeros(self._history + self.block_in, dtype=np.float32)
        self._gathered: Float32Array = np.zeros((self.block_out, per_phase), dtype=np.float32)
        self._block_view = self._ext[self._history :]
        self._tail_view = self._ext[self.block_in :]
        self._head_view = self._ext[: self._history]

    def process(self, block: Float32Array, out: Float32Array) -> None:
        """Resample one ``block_in`` block into ``out`` (``block_out`` samples)."""
        if self.identity:
            np.copyto(out, block)
            return
        if self.kernel is not None:
            self.kernel.resample(self._ext, block, self._taps, out, self.up, self.down)
            return
        np.copyto(self._block_view, block)
        # mode="clip": with the default "raise", numpy buffers `out` (a hidden allocation);
        # the indices are in range by construction, so clipping never changes a value
        np.take(self._ext, self._index, out=self._gathered, mode="clip")
        # multiply + reduce rather than einsum: einsum buffers its output internally
        np.multiply(self._gathered, self._taps, out=self._gathered)
        np.add.reduce(self._gathered, axis=1, out=out)
        if self._history:
            np.copyto(self._head_view, self._tail_view)

    def prime(self, block: Float32Array) -> None:
        """Take ``block`` into the history without computing its output: the next
        :meth:`process` then gives exactly what it would have after ``process(block)``
        (the idle mic: nobody listens, but the next frame must be seamless)."""
        if not self._history:
            return
        if self._history <= self.block_in:
            np.copyto(self._head_view, block[self.block_in - self._history :])
        else:
            np.copyto(self._block_view, block)
            np.copyto(self._head_view, self._tail_view)

    def reset(self) -> None:
        """Forget the carried history (after a discontinuity such as a device reopen)."""
        if not self.identity:
            self._ext.fill(0.0)

    @property
    def state(self) -> tuple[Float32Array, Float32Array] | None:
        """(history buffer, taps) for the C kernel's fused calls; None for the identity."""
        return None if self.identity else (self._ext, self._taps)

    @property
    def taps_per_output(self) -> int:
        """Multiply-adds per output sample (0 for the identity)."""
        return 0 if self.identity else int(self._taps.shape[1])
