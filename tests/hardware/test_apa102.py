"""APA102 frames: the exact bytes, through a recording SPI, through gpiozero's
SPI on mock pins (the ReSpeaker path) and through the bit-banged pins (the
Voice Bonnet path)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from gpiozero.exc import GPIOPinInUse
from gpiozero.pins.mock import MockPWMPin, MockSPIDevice

from huxleyd.clock import ManualClock
from huxleyd.hardware.apa102 import Apa102Driver, BitBangSpi, apa102_frame, global_brightness
from huxleyd.hardware.boards import LedProfile, load_board
from huxleyd.hardware.led_controller import LedController
from huxleyd.hardware.led_drivers import GpioLedDriver, make_led_driver
from huxleyd.hardware.led_patterns import LedPattern, LedState, PatternKind

HW = Path(__file__).resolve().parents[2] / "hw"


class RecordingSpi:
    """A fake SPI that records every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Sequence[int]) -> int:
        assert not self.closed, "write after close"
        assert all(0 <= b <= 255 for b in data)
        self.writes.append(bytes(data))
        return len(data)

    def close(self) -> None:
        self.closed = True


def test_frame_layout_for_three_leds() -> None:
    frame = apa102_frame([(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 0.5)], brightness=8)
    assert frame == bytes.fromhex(
        "00000000"  # start frame
        "e8 00 00 ff"  # LED 1: 0b111 + brightness 8, then blue, green, red
        "e8 00 ff 00"
        "e8 80 00 00"  # 0.5 rounds to 128
        "00000000"  # SK9822 reset frame
        "00"  # end frame: ceil(3 / 16) byte
    )


def test_frame_color_order_and_end_frame_length() -> None:
    frame = apa102_frame([(1.0, 0.5, 0.0)] * 17, brightness=31, color_order="rgb")
    assert frame[4:8] == bytes((0xFF, 0xFF, 0x80, 0x00))
    assert len(frame) == 4 + 17 * 4 + 4 + 2
    with pytest.raises(ValueError):
        apa102_frame([], brightness=32)


def test_global_brightness() -> None:
    assert [global_brightness(x) for x in (0.0, 0.001, 0.25, 1.0)] == [0, 1, 8, 31]


def test_driver_writes_a_frame_only_when_it_changes() -> None:
    spi = RecordingSpi()
    clock = ManualClock()
    driver = Apa102Driver(spi, count=3, brightness=0.25)
    blink = LedPattern(PatternKind.BLINK, (1.0, 0.0, 0.0), on_s=0.1, off_s=0.1)
    leds = LedController(
        driver,
        clock,
        patterns={s: LedPattern(PatternKind.OFF) for s in LedState}
        | {
            LedState.LISTENING: LedPattern(PatternKind.SOLID, (0.0, 0.0, 1.0)),
            LedState.THINKING: blink,
        },
        initial=LedState.IDLE,
    )
    off = driver.frame_for((0, 0, 0))
    blue = driver.frame_for((0, 0, 1))
    red = driver.frame_for((1, 0, 0))
    assert blue[4:8] == bytes((0xE8, 0xFF, 0x00, 0x00))
    assert spi.writes == [off]
    leds.set_state(LedState.LISTENING)
    for _ in range(5):
        clock.advance(0.04)
        leds.tick()  # solid: nothing new to write
    assert spi.writes == [off, blue]
    leds.set_state(LedState.THINKING)
    for _ in range(10):  # 0.4 s of ticks at 25 Hz = two blink periods
        clock.advance(0.04)
        leds.tick()
    assert spi.writes[2:] == [red, off, red, off]
    leds.close()
    assert spi.writes[-1] == off and spi.closed
    leds.close()  # idempotent


def test_driver_pulse_ramps() -> None:
    spi = RecordingSpi()
    driver = Apa102Driver(spi, count=1, brightness=1.0)
    driver.show(LedPattern(PatternKind.PULSE, (0.0, 1.0, 0.0), fade_in_s=0.2, fade_out_s=0.2), 0.0)
    for step in range(1, 11):
        driver.tick(step * 0.04)
    greens = [w[6] for w in spi.writes]  # byte 6: the green of the only LED (b, g, r)
    assert greens[0] == 0
    peak = greens.index(max(greens))
    assert greens[: peak + 1] == sorted(greens[: peak + 1]) and max(greens) == 255
    assert greens[peak:] == sorted(greens[peak:], reverse=True)


class ByteRecorder(MockSPIDevice):  # type: ignore[misc]
    """gpiozero's mock SPI peripheral, collecting whole bytes (MSB first)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.received = bytearray()

    def on_start(self) -> None:
        super().on_start()

    def on_bit(self) -> None:
        if self.rx_bit % 8 == 0:
            self.received.append(self.rx_word() & 0xFF)
            self.rx_buf: list[int] = []


def test_respeaker_profile_goes_through_gpiozero_spi(plain_factory: Any) -> None:
    """spi_bus 0 / spi_device 1 → gpiozero's SPI on SCLK 11, MOSI 10, CE1 7 (mocked)."""
    board = load_board("respeaker-2mic", HW)
    peripheral = ByteRecorder(11, 10, 9, 7, pin_factory=plain_factory)
    driver = make_led_driver(board.leds, pin_factory=plain_factory)
    assert isinstance(driver, Apa102Driver)
    driver.show(LedPattern(PatternKind.SOLID, (0.0, 0.0, 1.0)), 0.0)
    assert bytes(peripheral.received) == driver.frame_for((0.0, 0.0, 1.0))
    assert bytes(peripheral.received)[4:8] == bytes((0xE8, 0xFF, 0, 0))
    driver.close()
    peripheral.close()


class SamplingClockPin(MockPWMPin):  # type: ignore[misc]
    """A clock pin that samples the data pin on each rising edge, like the LED does."""

    data_pin: Any = None
    bits: list[int]

    def _change_state(self, value: float) -> bool:
        changed: bool = super()._change_state(value)
        if changed and value:
            self.bits.append(int(self.data_pin.state))
        return changed


def test_bit_banged_spi_on_the_voice_bonnet_pins(factory: Any) -> None:
    board = load_board("voice-bonnet", HW)
    assert (board.leds.clock_pin, board.leds.data_pin) == (6, 5)
    clock_pin = factory.pin(6, pin_class=SamplingClockPin)
    clock_pin.data_pin = factory.pin(5)
    clock_pin.bits = []
    driver = make_led_driver(board.leds, pin_factory=factory)
    driver.show(LedPattern(PatternKind.SOLID, (1.0, 0.0, 0.0)), 0.0)
    bits = clock_pin.bits
    received = bytes(int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8))
    assert isinstance(driver, Apa102Driver)
    assert received == driver.frame_for((1.0, 0.0, 0.0))
    assert received[4] == 0xE0 | global_brightness(board.leds.brightness)
    assert clock_pin.state == 0  # mode 0: the clock idles low
    driver.close()


def test_bit_bang_releases_its_first_pin_if_the_second_is_taken(factory: Any) -> None:
    holder = BitBangSpi(20, 21, pin_factory=factory)
    with pytest.raises(GPIOPinInUse):
        BitBangSpi(22, 21, pin_factory=factory)
    BitBangSpi(22, 23, pin_factory=factory).close()  # GPIO22 was given back
    holder.close()


def test_make_led_driver_for_each_shipped_board(factory: Any) -> None:
    assert isinstance(
        make_led_driver(load_board("gpio-basic", HW).leds, pin_factory=factory), GpioLedDriver
    )
    spi = RecordingSpi()
    driver = make_led_driver(
        LedProfile(kind="apa102", spi_bus=0, spi_device=0, count=2), pin_factory=factory, spi=spi
    )
    driver.show(LedPattern(PatternKind.SOLID), 0.0)
    assert len(spi.writes[0]) == 4 + 2 * 4 + 4 + 1
