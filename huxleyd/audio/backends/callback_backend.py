"""The PortAudio *callback* backend: the speaker's deadline runs in C, out of the GIL.

Capture is PyAudio's blocking read, as in :mod:`.pyaudio_backend` (it paces the
engine). Playback is :mod:`huxleyd.audio._rtout`: a PortAudio callback stream
with short periods (``callback_period_ms``, 5 ms by default) fed through a
lock-free ring. The engine's ``write`` only copies a mixed period into the ring;
the callback copies it to the device without the GIL, so a busy Python thread
can delay the engine by tens of milliseconds without the speaker noticing.

The backend is also the engine's :class:`~.base.OutputClock`: where each
written frame is at the DAC (from the callback's ``outputBufferDacTime``), a
cut (barge-in) honoured by the callback within its next short period, with its
own fade, and the frames that cut dropped. xruns are counted from the
callback's status flags; nothing closes a stream because of one.
"""

from __future__ import annotations

import importlib
from typing import Any

from huxleyd.audio.backends.base import IoStatus
from huxleyd.audio.backends.pyaudio_backend import PyAudioBackend
from huxleyd.audio.pcm import Int16Array, period_frames
from huxleyd.errors import AudioDeviceError


class CallbackBackend(PyAudioBackend):
    """PyAudio capture, C callback playback."""

    def __init__(
        self,
        *,
        callback_period_ms: float = 2.5,
        output_latency_s: float = 0.005,
        fade_ms: float = 5.0,
        ring_ms: int = 500,
        **kwargs: Any,
    ) -> None:
        super().__init__(prefill_periods=0, **kwargs)
        self.callback_period_ms = callback_period_ms
        self.output_latency_s = output_latency_s
        self.fade_ms = fade_ms
        self.ring_ms = ring_ms
        self._output: Any = None
        self._out_rate = 0

    # -- AudioBackend ---------------------------------------------------------

    def _open_playback(self, module: Any, index: int, rate: int, period_ms: int) -> Any:
        try:
            rtout = importlib.import_module("huxleyd.audio._rtout")
        except ImportError as exc:
            raise AudioDeviceError(
                f"the C playback extension is not built ({exc}); reinstall huxleyd "
                "with a C compiler and portaudio19-dev, or set audio.backend = 'pyaudio'"
            ) from exc
        self._out_rate = rate
        output = rtout.Output(
            device=index,
            rate_hz=rate,
            channels=self.output_channels,
            period_frames=max(16, round(rate * self.callback_period_ms / 1000.0)),
            ring_frames=max(4 * period_frames(rate, period_ms), rate * self.ring_ms // 1000),
            fade_frames=max(1, round(rate * self.fade_ms / 1000.0)),
            latency_s=self.output_latency_s,
        )
        output.start()
        self._output = output
        return output

    def _output_latency(self, stream: Any) -> float:
        return float(stream.latency_s())

    def write(self, data: Int16Array) -> IoStatus:
        output = self._output
        if output is None or not output.active():
            return IoStatus.LOST
        output.write(data)  # never blocks; a full ring (engine far ahead) keeps the oldest
        return IoStatus.OK

    def close(self) -> None:
        output, self._output = self._output, None
        if output is not None:
            output.close()
        super().close()

    # -- OutputClock ----------------------------------------------------------

    def written_frames(self) -> int:
        return int(self._output.written()) if self._output is not None else 0

    def queued_frames(self) -> int:
        return int(self._output.queued()) if self._output is not None else 0

    def heard_frame(self) -> int:
        return int(self._output.heard()) if self._output is not None else 0

    def cut(self) -> tuple[int, int] | None:
        if self._output is None:
            return None
        seq, end = self._output.cut()
        return int(seq), int(end)

    def resume(self, seq: int, at: int) -> None:
        if self._output is not None:
            self._output.resume(seq, at)

    def drops(self) -> tuple[int, int, int]:
        if self._output is None:
            return 0, 0, 0
        done, start, end = self._output.drops()
        return int(done), int(start), int(end)

    def device_xruns(self) -> int:
        return int(self._output.xruns()) if self._output is not None else 0

    def status(self) -> dict[str, Any]:
        """All the callback's counters and positions (see ``_rtout.c``), for benches."""
        if self._output is None:
            return {}
        result: dict[str, Any] = self._output.status()
        return result

    @property
    def output_rate_hz(self) -> int:
        return self._out_rate
