"""The PyAudio backend: PortAudio on ALSA, blocking reads and writes from the audio thread.

The capture stream's blocking ``read`` paces the engine (one period per
call); the playback stream is primed with ``prefill_periods`` of silence at
open, so a write right after each read never waits and never runs dry. Both
streams are opened at the device's native rate (or ``rate_hz``) and the engine
resamples at its edges. A multi-mic HAT is opened with all its channels; the
engine picks ``mic_channel``.

xruns: reads and writes never ask PyAudio to raise on an overflow or an
underflow (on that path PyAudio closes the stream, and one xrun became a 3 s
reopen); PortAudio recovers from them by itself, and PyAudio then drops the
``paOutputUnderflowed``/``paInputOverflowed`` it returns. So they are seen from
what an xrun leaves behind, on a paced (clocked) device only:

- an underrun: before a write, the playback buffer is free again as a whole
  (``get_write_available`` equals what it said at the open, before anything was
  written): the card ran dry. PortAudio's own recovery reads the same way.
- an overrun: frames vanished between two reads: the card made more frames
  (time between the reads, on the injected clock, times the rate) than the
  engine took plus what waits (``get_read_available``), by more than
  :data:`LOST_PERIODS` periods. Recovering from an overrun drops the whole
  capture buffer (two periods or more), so an overrun always loses more than
  that; the pointer moving in whole periods errs by less.

The callback backend (:mod:`.callback_backend`) counts them from the
callback's status flags.

Loss: any PortAudio error means the device is gone (USB unplugged, driver reset). ``read``/``write`` then report
``IoStatus.LOST``; the engine closes the backend and calls ``open`` again
every ``reopen_interval_s``. Each ``open`` starts a fresh PortAudio session
(``PyAudio()``), because PortAudio only rescans devices on initialisation —
without that a replugged card would never be found.

The ``pyaudio`` module is injected (``pyaudio_module=``) so tests can pass a
fake; by default the real one is imported on first ``open``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from huxleyd.audio.backends.alsa_names import (
    Direction,
    PaDevice,
    read_cards,
    resolve_device,
    wants_plughw,
)
from huxleyd.audio.backends.base import DeviceFormat, IoStatus
from huxleyd.clock import Clock, MonotonicClock
from huxleyd.errors import AudioDeviceError, AudioError
from huxleyd.pcm import Int16Array, period_frames

LOST_PERIODS = 1.5
"""Capture frames missing between two reads, in periods, that mean an overrun."""


class PyAudioBackend:
    """A capture and a playback device through PortAudio (blocking I/O)."""

    def __init__(
        self,
        *,
        capture_device: str = "default",
        playback_device: str = "default",
        rate_hz: int | None = None,
        input_channels: int = 1,
        output_channels: int = 1,
        prefill_periods: int = 2,
        paced: bool = True,
        pyaudio_module: Any = None,
        cards_path: Path = Path("/proc/asound/cards"),
        clock: Clock | None = None,
    ) -> None:
        self.capture_device = capture_device
        self.playback_device = playback_device
        self.rate_hz = rate_hz
        self.input_channels = input_channels
        self.output_channels = output_channels
        self.prefill_periods = prefill_periods
        self.paced = paced
        """False for sinks without a clock (ALSA's ``null``/``file``): the engine clock paces."""
        self._module = pyaudio_module
        self._cards_path = cards_path
        self._pa: Any = None
        self._in: Any = None
        self._out: Any = None
        self._frames_in = 0
        self._frames_out = 0
        self._read_target: Int16Array | None = None
        self._read_flat: Int16Array | None = None
        self._clock = clock or MonotonicClock()
        self._rate_in = 0
        self._out_buffer_frames = 0
        """The playback buffer (free when nothing was written); 0: unknown, not watched."""
        self._last_read: tuple[float, int] | None = None
        self._silence = b""
        """(clock, frames queued) after the last read, for the overrun check."""

    # -- the AudioBackend interface (audio thread) ---------------------------

    def open(self, *, period_ms: int) -> DeviceFormat:
        module = self._pyaudio()
        if wants_plughw(self.capture_device) or wants_plughw(self.playback_device):
            # read by PortAudio when it initialises: open hw PCMs through ALSA's plug
            os.environ["PA_ALSA_PLUGHW"] = "1"
        self.close()
        try:
            self._pa = module.PyAudio()
            return self._open_streams(module, period_ms)
        except AudioDeviceError:
            self.close()
            raise
        except (OSError, ValueError, AudioError) as exc:
            self.close()
            raise AudioDeviceError(
                f"cannot open capture {self.capture_device!r} / playback "
                f"{self.playback_device!r}: {exc}"
            ) from exc

    def _open_streams(self, module: Any, period_ms: int) -> DeviceFormat:
        devices = self.list_devices()
        cards = read_cards(self._cards_path)
        capture = self._resolve(self.capture_device, devices, "input", cards)
        playback = self._resolve(self.playback_device, devices, "output", cards)
        in_rate = self.rate_hz or capture.default_rate_hz
        out_rate = self.rate_hz or playback.default_rate_hz
        self._frames_in = period_frames(in_rate, period_ms)
        self._rate_in = in_rate
        self._last_read = None
        self._frames_out = period_frames(out_rate, period_ms)
        self._in = self._open_capture(module, capture.index, in_rate, period_ms)
        self._out = self._open_playback(module, playback.index, out_rate, period_ms)
        return DeviceFormat(
            input_rate_hz=in_rate,
            output_rate_hz=out_rate,
            input_channels=self.input_channels,
            output_channels=self.output_channels,
            output_latency_s=self._output_latency(self._out),
            input_latency_s=self._input_latency(self._in),
            paced=self.paced,
            description=f"{self._kind()} in={capture.name!r}[{capture.index}] out={playback.name!r}[{playback.index}]",
        )

    def _open_capture(self, module: Any, index: int, rate: int, period_ms: int) -> Any:
        return self._open_stream(module, "input", index, rate, self.input_channels, self._frames_in)

    def _open_stream(
        self, module: Any, direction: str, index: int, rate: int, channels: int, frames: int
    ) -> Any:
        """One blocking PyAudio stream, ``direction`` ``"input"`` or ``"output"``."""
        return self._pa.open(
            format=module.paInt16,
            channels=channels,
            rate=rate,
            frames_per_buffer=frames,
            **{direction: True, f"{direction}_device_index": index},
        )

    def _input_latency(self, stream: Any) -> float:
        return float(stream.get_input_latency())

    def _open_playback(self, module: Any, index: int, rate: int, period_ms: int) -> Any:
        stream = self._open_stream(
            module, "output", index, rate, self.output_channels, self._frames_out
        )
        # Nothing written yet: all the buffer is free. A write that finds it so
        # again comes after the card ran dry (see the module docstring).
        self._out_buffer_frames = max(0, int(stream.get_write_available()))
        self._silence = bytes(2 * self._frames_out * self.output_channels)
        for _ in range(self.prefill_periods):
            stream.write(self._silence, self._frames_out)
        return stream

    def _kind(self) -> str:
        """How this backend drives the card, for the description in logs and doctor."""
        return "pyaudio"

    def _output_latency(self, stream: Any) -> float:
        return float(stream.get_output_latency())

    def read(self, out: Int16Array) -> IoStatus:
        stream = self._in
        if stream is None:
            return IoStatus.LOST
        if out is not self._read_target:  # the engine passes the same array each period
            self._read_target = out
            self._read_flat = out.reshape(-1)
        flat = self._read_flat
        assert flat is not None
        try:
            # Never exception_on_overflow=True: on that path PyAudio gives up the
            # period and the stream, so one overrun became a 3 s reopen. PortAudio
            # recovers from an overrun by itself; the data read is the next period.
            data = stream.read(self._frames_in, exception_on_overflow=False)
            queued = int(stream.get_read_available()) if self.paced else 0
        except OSError:
            return IoStatus.LOST
        np.copyto(flat, np.frombuffer(data, dtype="<i2"))
        return self._capture_status(self._clock.monotonic(), queued)

    def _capture_status(self, now: float, queued: int) -> IoStatus:
        """XRUN when frames vanished since the last read: the card overran."""
        last, self._last_read = self._last_read, (now, queued)
        if last is None or not self.paced:
            return IoStatus.OK
        made = (now - last[0]) * self._rate_in
        taken = self._frames_in + queued - last[1]
        return IoStatus.XRUN if made - taken > LOST_PERIODS * self._frames_in else IoStatus.OK

    def write(self, data: Int16Array) -> IoStatus:
        stream = self._out
        if stream is None:
            return IoStatus.LOST
        try:
            # PyAudio accepts only immutable bytes here (not a view of our buffer):
            # one bytes object per period, freed as soon as the call returns.
            # exception_on_underflow=False for the same reason as in read().
            dry = self.paced and 0 < self._out_buffer_frames <= stream.get_write_available()
            if dry:
                # PortAudio restarted the stream empty after the underrun: prime it
                # again as at the open, or the very next period underruns too.
                for _ in range(self.prefill_periods - 1):
                    stream.write(self._silence, self._frames_out, exception_on_underflow=False)
            stream.write(data.tobytes(), self._frames_out, exception_on_underflow=False)
        except OSError:
            return IoStatus.LOST
        return IoStatus.XRUN if dry else IoStatus.OK

    def close(self) -> None:
        for stream in (self._in, self._out):
            if stream is not None:
                try:
                    stream.stop_stream()
                    stream.close()
                except OSError:
                    pass  # already gone with the device
        self._in = self._out = None
        if self._pa is not None:
            self._pa.terminate()
            self._pa = None

    # -- helpers -------------------------------------------------------------

    def list_devices(self) -> list[PaDevice]:
        """The devices of the current PortAudio session (open it first)."""
        if self._pa is None:
            raise AudioError("list_devices() needs an open PortAudio session")
        devices = []
        for index in range(self._pa.get_device_count()):
            info = self._pa.get_device_info_by_index(index)
            devices.append(
                PaDevice(
                    index=index,
                    name=str(info["name"]),
                    max_input_channels=int(info["maxInputChannels"]),
                    max_output_channels=int(info["maxOutputChannels"]),
                    default_rate_hz=int(info["defaultSampleRate"]),
                )
            )
        return devices

    def _resolve(
        self, spec: str, devices: list[PaDevice], direction: Direction, cards: dict[str, int]
    ) -> PaDevice:
        setting = "audio.capture_device" if direction == "input" else "audio.playback_device"
        device = resolve_device(spec, devices, direction=direction, cards=cards, setting=setting)
        wanted = self.input_channels if direction == "input" else self.output_channels
        if device.channels(direction) < wanted:
            raise AudioDeviceError(
                f"{setting} = {spec!r} ({device.name!r}) has {device.channels(direction)} "
                f"{direction} channel(s); {wanted} wanted"
            )
        return device

    def _pyaudio(self) -> Any:
        if self._module is None:
            try:
                self._module = importlib.import_module("pyaudio")
            except ImportError as exc:
                raise AudioDeviceError(f"PyAudio is not installed: {exc}") from exc
        return self._module
