"""A sound card through PortAudio, found by PyAudio: the session, the devices, the open.

PyAudio is huxleyd's device finder: it lists PortAudio's devices (names, indexes,
channel counts, default rates), and :class:`PortAudioCard` resolves
``audio.capture_device`` and ``audio.playback_device`` against them (ALSA names,
``plughw:CARD=…``, ``default`` or an index: :mod:`.alsa_names`) and checks their
channels. Opening the streams is the subclass's: the callback backend
(:mod:`.callback_backend`) opens the C callback streams of ``huxleyd.audio._rt``.
(PyAudio's own blocking streams were a second speaker path until issue 39: slower
to cut, late on truncation, mixed and counted on their own; they are gone.)

Each :meth:`PortAudioCard.open` starts a fresh PortAudio session (``PyAudio()``),
because PortAudio only rescans devices on initialisation: without that a replugged
card would never be found. :meth:`PortAudioCard.probe` does only that much (the
session, the two devices, the channels) and lets go: ``audio.backend = "auto"``
asks it whether the card is there.

The ``pyaudio`` module is injected (``pyaudio_module=``) so tests can pass a
fake; by default the real one is imported on first use.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from huxleyd.audio.backends.alsa_names import (
    Direction,
    PaDevice,
    read_cards,
    resolve_device,
    wants_plughw,
)
from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.errors import AudioDeviceError, AudioError
from huxleyd.pcm import period_frames


class PortAudioCard:
    """A capture and a playback device through PortAudio; the streams are the subclass's."""

    def __init__(
        self,
        *,
        capture_device: str = "default",
        playback_device: str = "default",
        rate_hz: int | None = None,
        input_channels: int = 1,
        output_channels: int = 1,
        pyaudio_module: Any = None,
        cards_path: Path = Path("/proc/asound/cards"),
    ) -> None:
        self.capture_device = capture_device
        self.playback_device = playback_device
        self.rate_hz = rate_hz
        self.input_channels = input_channels
        self.output_channels = output_channels
        self._module = pyaudio_module
        self._cards_path = cards_path
        self._pa: Any = None
        self._in: Any = None
        self._out: Any = None
        self._frames_in = 0

    # -- the AudioBackend interface (audio thread) ---------------------------

    def open(self, *, period_ms: int) -> DeviceFormat:
        self.close()
        try:
            self._session()
            return self._open_streams(period_ms)
        except AudioDeviceError:
            self.close()
            raise
        except (OSError, ValueError, AudioError) as exc:
            self.close()
            raise AudioDeviceError(
                f"cannot open capture {self.capture_device!r} / playback "
                f"{self.playback_device!r}: {exc}"
            ) from exc

    def probe(self) -> None:
        """The devices are there, with their channels (no stream opened); raises
        AudioDeviceError saying what is missing."""
        self.close()
        try:
            self._session()
            self._devices()
        except (OSError, ValueError, AudioError) as exc:
            if isinstance(exc, AudioDeviceError):
                raise
            raise AudioDeviceError(
                f"cannot find capture {self.capture_device!r} / playback "
                f"{self.playback_device!r}: {exc}"
            ) from exc
        finally:
            self.close()

    def _session(self) -> None:
        module = self._pyaudio()
        if wants_plughw(self.capture_device) or wants_plughw(self.playback_device):
            # read by PortAudio when it initialises: open hw PCMs through ALSA's plug
            os.environ["PA_ALSA_PLUGHW"] = "1"
        self._pa = module.PyAudio()

    def _devices(self) -> tuple[PaDevice, PaDevice]:
        devices = self.list_devices()
        cards = read_cards(self._cards_path)
        capture = self._resolve(self.capture_device, devices, "input", cards)
        playback = self._resolve(self.playback_device, devices, "output", cards)
        return capture, playback

    def _open_streams(self, period_ms: int) -> DeviceFormat:
        capture, playback = self._devices()
        in_rate = self.rate_hz or capture.default_rate_hz
        out_rate = self.rate_hz or playback.default_rate_hz
        self._frames_in = period_frames(in_rate, period_ms)
        self._in = self._open_capture(capture.index, in_rate, period_ms)
        self._out = self._open_playback(playback.index, out_rate, period_ms)
        return DeviceFormat(
            input_rate_hz=in_rate,
            output_rate_hz=out_rate,
            input_channels=self.input_channels,
            output_channels=self.output_channels,
            output_latency_s=self._output_latency(self._out),
            input_latency_s=self._input_latency(self._in),
            paced=True,
            description=f"{self._kind()} in={capture.name!r}[{capture.index}] out={playback.name!r}[{playback.index}]",
        )

    # -- what the subclass opens -----------------------------------------------

    def _open_capture(self, index: int, rate: int, period_ms: int) -> Any:
        raise NotImplementedError

    def _open_playback(self, index: int, rate: int, period_ms: int) -> Any:
        raise NotImplementedError

    def _input_latency(self, stream: Any) -> float:
        raise NotImplementedError

    def _output_latency(self, stream: Any) -> float:
        raise NotImplementedError

    def _kind(self) -> str:
        """How the subclass drives the card, for the description in logs and doctor."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of the PortAudio session (the subclass closes its streams first)."""
        self._in = self._out = None
        if self._pa is not None:
            self._pa.terminate()
            self._pa = None

    # -- the device finder -----------------------------------------------------

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
