"""The device edges of the engine: capture (device → mic frames) and playback (mix → device).

Built when the device opens (allocation happens here, never per period) and
rebuilt after a reopen. Each ``process`` call works on preallocated buffers: with
the C kernel (:mod:`huxleyd.audio.dsp`) one call per chain and period (column,
scale, meter, resample, int16, channel fan-out), the GIL held throughout; the
numpy path is the reference.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.resample import StreamResampler
from huxleyd.pcm import (
    INT16_SCALE,
    RATE_HZ,
    Float32Array,
    Int16Array,
    float_to_int16_into,
    period_frames,
)

CAPTURE_RATES_HZ = (24_000, 16_000)
"""Rates a provider may ask the mic to be delivered at."""

_TO_FLOAT = np.float32(1.0 / INT16_SCALE)


class CaptureChain:
    """One channel of the device input → float → resampled → PCM16 at the capture rate."""

    def __init__(
        self,
        fmt: DeviceFormat,
        *,
        period_ms: int,
        mic_channel: int,
        meter: LevelMeter,
        kernel: ModuleType | None = KERNEL,
    ):
        self._kernel = kernel
        self._channel = mic_channel
        if mic_channel >= fmt.input_channels:
            raise ValueError(
                f"audio.mic_channel = {mic_channel} but the capture device has "
                f"{fmt.input_channels} channel(s)"
            )
        frames = period_frames(fmt.input_rate_hz, period_ms)
        self.buffer: Int16Array = np.zeros((frames, fmt.input_channels), dtype=np.int16)
        """Where the backend reads into."""
        self._column = self.buffer[:, mic_channel]
        self._mono: Float32Array = np.zeros(frames, dtype=np.float32)
        self._resamplers = {
            rate: StreamResampler(fmt.input_rate_hz, rate, frames, kernel=kernel)
            for rate in CAPTURE_RATES_HZ
        }
        self._float = {
            rate: np.zeros(r.block_out, dtype=np.float32) for rate, r in self._resamplers.items()
        }
        self._pcm = {
            rate: np.zeros(r.block_out, dtype=np.int16) for rate, r in self._resamplers.items()
        }
        self._scratch = {
            rate: np.zeros(r.block_out, dtype=np.float32) for rate, r in self._resamplers.items()
        }
        self._rate = CAPTURE_RATES_HZ[0]
        self._meter = meter
        self._in_rate = fmt.input_rate_hz

    def delay_s(self, rate_hz: int) -> float:
        """How much later than its input a frame at ``rate_hz`` comes out (the
        resampler's group delay): what a capture time is moved by."""
        return self._resamplers[rate_hz].delay_in / self._in_rate

    def process(self, rate_hz: int) -> Int16Array:
        """Convert the period in :attr:`buffer`; return the frame at ``rate_hz`` (reused array)."""
        if self._kernel is not None:
            self._fused(rate_hz, listen=True)
            return self._pcm[rate_hz]
        self._take(rate_hz)
        out = self._float[rate_hz]
        self._resamplers[rate_hz].process(self._mono, out)
        pcm = self._pcm[rate_hz]
        float_to_int16_into(out, pcm, self._scratch[rate_hz])
        return pcm

    def prime(self, rate_hz: int) -> None:
        """The idle mic (nobody listens): meter the period and keep the resampler's
        history, without resampling; the next :meth:`process` is seamless."""
        if self._kernel is not None:
            self._fused(rate_hz, listen=False)
            return
        self._take(rate_hz)
        self._resamplers[rate_hz].prime(self._mono)

    def _fused(self, rate_hz: int, *, listen: bool) -> None:
        """The C kernel's one call: column, scale, meter, then resample + int16 or prime."""
        assert self._kernel is not None
        self._switch(rate_hz)
        resampler = self._resamplers[rate_hz]
        state = resampler.state
        ext, taps = (None, None) if state is None else state
        peak, power = self._kernel.capture(
            self.buffer,
            self._channel,
            self._mono,
            ext,
            taps,
            resampler.up,
            resampler.down,
            self._float[rate_hz] if listen else None,
            self._pcm[rate_hz] if listen else None,
        )
        self._meter.record(peak, power)

    def _switch(self, rate_hz: int) -> None:
        if rate_hz != self._rate:
            self._resamplers[rate_hz].reset()  # stale history from before the switch
            self._rate = rate_hz

    def _take(self, rate_hz: int) -> None:
        self._switch(rate_hz)
        np.copyto(self._mono, self._column, casting="unsafe")  # no mixed-type ufunc: no buffer
        np.multiply(self._mono, _TO_FLOAT, out=self._mono)
        self._meter.update(self._mono)


class PlaybackChain:
    """The 24 kHz float mix → device rate → PCM16 on every output channel."""

    def __init__(
        self,
        fmt: DeviceFormat,
        *,
        period_ms: int,
        meter: LevelMeter,
        kernel: ModuleType | None = KERNEL,
    ):
        self._kernel = kernel
        mix_frames = period_frames(RATE_HZ, period_ms)
        frames = period_frames(fmt.output_rate_hz, period_ms)
        self.mix: Float32Array = np.zeros(mix_frames, dtype=np.float32)
        """Where the mixer writes."""
        self._resampler = StreamResampler(RATE_HZ, fmt.output_rate_hz, mix_frames, kernel=kernel)
        self._device: Float32Array = np.zeros(frames, dtype=np.float32)
        self._scratch: Float32Array = np.zeros(frames, dtype=np.float32)
        self._mono: Int16Array = np.zeros(frames, dtype=np.int16)
        self.buffer: Int16Array = np.zeros((frames, fmt.output_channels), dtype=np.int16)
        """What the backend writes."""
        self.silence: Int16Array = np.zeros_like(self.buffer)
        """What the backend writes on the idle path."""
        self._mono_column = self._mono[:, None]
        self._channels = fmt.output_channels
        self._meter = meter
        self.delay_samples = round(self._resampler.delay_in)
        """The resampler's delay, in mixer samples."""

    def resampler_state(self) -> tuple[Float32Array, Float32Array] | None:
        """(history, taps) of the mix -> device resampler; None when the rates are equal."""
        return self._resampler.state

    def resampler_ratio(self) -> tuple[int, int]:
        """(up, down) of the mix -> device resampler; (0, 0) when the rates are equal."""
        r = self._resampler
        return (0, 0) if r.identity else (r.up, r.down)

    def process(self) -> Int16Array:
        """Convert :attr:`mix`; return the device buffer (reused array)."""
        if self._kernel is not None:
            resampler = self._resampler
            state = resampler.state
            ext, taps = (None, None) if state is None else state
            peak, power = self._kernel.play(
                self.mix, ext, taps, resampler.up, resampler.down, self._device, self.buffer
            )
            self._meter.record(peak, power)
            return self.buffer
        self._resampler.process(self.mix, self._device)
        self._meter.update(self._device)
        if self._channels == 1:
            float_to_int16_into(self._device, self.buffer[:, 0], self._scratch)
        else:
            float_to_int16_into(self._device, self._mono, self._scratch)
            np.copyto(self.buffer, self._mono_column)
        return self.buffer
