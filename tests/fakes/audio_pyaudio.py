"""A fake ``pyaudio`` module: scripted devices and streams that record what they were asked.

Pass an instance as ``CallbackBackend(pyaudio_module=...)`` (the device finder). Change
:attr:`FakePyAudioModule.devices` between sessions to unplug or replug a
card; queue errors on :attr:`FakePyAudioModule.read_errors` /
:attr:`write_errors` (PortAudio codes, raised as PyAudio raises them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PA_INPUT_OVERFLOWED = -9981
PA_OUTPUT_UNDERFLOWED = -9980
PA_HOST_ERROR = -9999


def device(name: str, *, inputs: int = 2, outputs: int = 2, rate_hz: int = 48000) -> dict[str, Any]:
    return {
        "name": name,
        "maxInputChannels": inputs,
        "maxOutputChannels": outputs,
        "defaultSampleRate": float(rate_hz),
    }


@dataclass
class FakeStream:
    module: FakePyAudioModule
    kwargs: dict[str, Any]
    written: list[bytes] = field(default_factory=list)
    closed: bool = False

    def read(self, frames: int, exception_on_overflow: bool = True) -> bytes:
        code = self.module.read_errors.pop(0) if self.module.read_errors else None
        if code is not None and (code != PA_INPUT_OVERFLOWED or exception_on_overflow):
            raise OSError(code, "fake PortAudio error")
        channels = int(self.kwargs["channels"])
        value = self.module.mic_value
        return (value.to_bytes(2, "little", signed=True)) * frames * channels

    def write(
        self, data: bytes, frames: int | None = None, exception_on_underflow: bool = False
    ) -> None:
        if not isinstance(data, bytes):
            raise TypeError("argument 2 must be read-only bytes-like object")  # as PyAudio says
        self.written.append(data)
        code = self.module.write_errors.pop(0) if self.module.write_errors else None
        if code is not None and (code != PA_OUTPUT_UNDERFLOWED or exception_on_underflow):
            raise OSError(code, "fake PortAudio error")

    def get_write_available(self) -> int:
        """Scripted on :attr:`FakePyAudioModule.write_available` (0 once it runs out)."""
        queue = self.module.write_available
        return queue.pop(0) if queue else 0

    def get_read_available(self) -> int:
        """Scripted on :attr:`FakePyAudioModule.read_available` (0 once it runs out)."""
        queue = self.module.read_available
        return queue.pop(0) if queue else 0

    def get_output_latency(self) -> float:
        return self.module.output_latency_s

    def get_input_latency(self) -> float:
        return 0.01

    def stop_stream(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class FakeSession:
    def __init__(self, module: FakePyAudioModule) -> None:
        self.module = module
        self.devices = list(module.devices)  # PortAudio scans once, at initialisation
        self.streams: list[FakeStream] = []
        self.terminated = False

    def get_device_count(self) -> int:
        return len(self.devices)

    def get_device_info_by_index(self, index: int) -> dict[str, Any]:
        return self.devices[index]

    def open(self, **kwargs: Any) -> FakeStream:
        stream = FakeStream(self.module, kwargs)
        self.streams.append(stream)
        return stream

    def terminate(self) -> None:
        self.terminated = True


class FakePyAudioModule:
    paInt16 = 8

    def __init__(self, devices: list[dict[str, Any]]) -> None:
        self.devices = devices
        self.sessions: list[FakeSession] = []
        self.read_errors: list[int | None] = []
        self.write_errors: list[int | None] = []
        self.write_available: list[int] = []
        """What the playback stream's ``get_write_available`` answers, call by call
        (the first: at the open, before the prefill: the whole buffer)."""
        self.read_available: list[int] = []
        """What the capture stream's ``get_read_available`` answers after each read."""
        self.mic_value = 1000
        self.output_latency_s = 0.03

    def PyAudio(self) -> FakeSession:  # the real module's name
        session = FakeSession(self)
        self.sessions.append(session)
        return session

    @property
    def session(self) -> FakeSession:
        return self.sessions[-1]

    def stream(self, *, output: bool) -> FakeStream:
        """The current session's capture (output=False) or playback stream."""
        key = "output" if output else "input"
        return [s for s in self.session.streams if s.kwargs.get(key)][-1]
