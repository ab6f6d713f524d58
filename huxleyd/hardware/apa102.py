"""APA102 ("DotStar") LEDs over SPI, behind the :class:`~huxleyd.hardware.led_drivers.LedDriver` interface.

The wire format (APA102 datasheet; SK9822 clones need the extra reset bytes):

- start frame: 32 zero bits;
- one 32-bit frame per LED: ``0b111`` + 5-bit global brightness, then the
  three colour bytes, blue-green-red on a genuine APA102;
- reset + end frame: 32 zero bits (SK9822 latch), then ``ceil(count / 16)``
  bytes so the data propagates through the last LED (each LED delays the
  stream by half a clock).

The strip cannot animate itself, so :class:`Apa102Driver` computes the level
of the current pattern on each :meth:`~Apa102Driver.tick` and writes a frame
only when it differs from the last one (a blink writes twice a period).

Two transports: hardware SPI from the pin factory (``/dev/spidev0.1`` on the
ReSpeaker; gpiozero picks spidev or lgpio) and :class:`BitBangSpi` on two
plain GPIOs (the Voice Bonnet wires its DotStars to GPIO5/6, not to SPI).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from gpiozero import DigitalOutputDevice

from huxleyd.hardware.boards import LedProfile
from huxleyd.hardware.led_patterns import OFF, LedPattern, PatternKind, Rgb, pattern_level
from huxleyd.hardware.pins import PinFactory

_CHANNEL = {"r": 0, "g": 1, "b": 2}


class SpiWriter(Protocol):
    """The part of gpiozero's ``SPI`` interface the driver uses."""

    def write(self, data: Sequence[int]) -> int: ...

    def close(self) -> None: ...


def global_brightness(fraction: float) -> int:
    """0.0-1.0 → the 5-bit APA102 global brightness (at least 1 unless 0)."""
    if fraction <= 0:
        return 0
    return max(1, min(31, round(fraction * 31)))


def apa102_frame(colors: Sequence[Rgb], *, brightness: int, color_order: str = "bgr") -> bytes:
    """The bytes that set ``len(colors)`` LEDs: start frame, LED frames, reset + end frame.

    ``colors`` are 0-1 floats; ``brightness`` is the 5-bit global value;
    ``color_order`` is the order the colour bytes go on the wire.
    """
    if not 0 <= brightness <= 31:
        raise ValueError(f"APA102 global brightness is 5 bits (0-31), got {brightness}")
    order = [_CHANNEL[c] for c in color_order]
    out = bytearray(4)  # start frame
    head = 0xE0 | brightness
    for color in colors:
        byte = [max(0, min(255, round(c * 255))) for c in color]
        out += bytes((head, byte[order[0]], byte[order[1]], byte[order[2]]))
    out += bytes(4 + (len(colors) + 15) // 16)
    return bytes(out)


class BitBangSpi:
    """Write-only SPI (mode 0, MSB first) on two GPIOs, for LEDs not on the SPI pins.

    Pins are reserved through gpiozero devices; the bits are written through
    the devices' pins directly, which skips gpiozero's per-call bookkeeping
    (a 3-LED frame is 160 bits, 480 pin writes).
    """

    def __init__(self, clock_pin: int, data_pin: int, *, pin_factory: PinFactory) -> None:
        self._clock: Any = DigitalOutputDevice(clock_pin, pin_factory=pin_factory)
        try:
            self._data: Any = DigitalOutputDevice(data_pin, pin_factory=pin_factory)
        except Exception:
            self._clock.close()
            raise

    def write(self, data: Sequence[int]) -> int:
        clock, mosi = self._clock.pin, self._data.pin
        for byte in data:
            for shift in range(7, -1, -1):
                mosi.state = (byte >> shift) & 1
                clock.state = 1  # the LED samples on the rising edge
                clock.state = 0
        return len(data)

    def close(self) -> None:
        self._clock.close()
        self._data.close()


def open_spi(profile: LedProfile, *, pin_factory: PinFactory) -> SpiWriter:
    """The SPI transport a board's ``[leds]`` describes."""
    if profile.spi_bus is not None and profile.spi_device is not None:
        spi: SpiWriter = pin_factory.spi(port=profile.spi_bus, device=profile.spi_device)
        return spi
    assert profile.clock_pin is not None and profile.data_pin is not None
    return BitBangSpi(profile.clock_pin, profile.data_pin, pin_factory=pin_factory)


class Apa102Driver:
    """Shows :class:`LedPattern` s on a chain of ``count`` APA102 LEDs, all the same colour."""

    def __init__(
        self,
        spi: SpiWriter,
        *,
        count: int,
        brightness: float = 0.25,
        color_order: str = "bgr",
    ) -> None:
        if sorted(color_order) != ["b", "g", "r"]:
            raise ValueError(f"color_order must order r, g and b, got {color_order!r}")
        self._spi = spi
        self._count = count
        self._brightness = global_brightness(brightness)
        self._order = color_order
        self._pattern: LedPattern = OFF
        self._since_s = 0.0
        self._last: bytes | None = None
        self._closed = False
        self.frames_written = 0

    def frame_for(self, color: Rgb) -> bytes:
        """The bytes that light every LED of the chain in ``color``."""
        return apa102_frame(
            [color] * self._count, brightness=self._brightness, color_order=self._order
        )

    def show(self, pattern: LedPattern, now_s: float) -> None:
        self._pattern, self._since_s = pattern, now_s
        self._render(now_s)

    def tick(self, now_s: float) -> None:
        if self._pattern.kind in (PatternKind.BLINK, PatternKind.PULSE):
            self._render(now_s)

    def _render(self, now_s: float) -> None:
        if self._closed:
            return
        level = pattern_level(self._pattern, now_s - self._since_s)
        r, g, b = self._pattern.lit_color
        frame = self.frame_for((r * level, g * level, b * level))
        if frame != self._last:
            self._spi.write(list(frame))
            self._last = frame
            self.frames_written += 1

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._spi.write(list(self.frame_for((0.0, 0.0, 0.0))))
        finally:
            self._closed = True
            self._spi.close()
