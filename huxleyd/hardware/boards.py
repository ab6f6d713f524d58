"""Board profiles: where the button, the LEDs and the sound card are.

A profile is a TOML file ``<boards_dir>/<name>.toml`` (shipped in ``hw/``)::

    description = "Seeed ReSpeaker 2-Mics Pi HAT v1 (WM8960)"
    asound_conf = "respeaker-2mic.asound.conf"   # optional, beside the profile

    [button]
    pin = 17            # BCM number
    pull_up = true
    bounce_ms = 20

    [leds]
    kind = "apa102"     # none | led | pwmled | rgbled | apa102
    count = 3
    spi_bus = 0
    spi_device = 1

    [audio]
    capture_device = "huxley_capture"
    playback_device = "huxley_playback"
    mixer_card = "seeed2micvoicec"
    mixer_control = "Playback"
    input_channels = 2
    mic_channel = 0

:func:`load_board` parses it once into frozen dataclasses; every mistake is a
:class:`~huxleyd.errors.ConfigError` naming the file and the key. This module
touches no hardware: the button and LED adapters take these profiles.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.errors import ConfigError
from huxleyd.schema import bounds, build

LedKind = Literal["none", "led", "pwmled", "rgbled", "apa102"]

_BCM_PIN = bounds(0, 27)
"""The 40-pin header exposes BCM GPIO 0-27."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonProfile:
    """The push-to-talk button: a switch from ``pin`` to ground (pull-up) or to 3V3."""

    pin: int = field(metadata=_BCM_PIN)
    pull_up: bool = True
    """True: the pin idles high through the pull-up and a press pulls it low."""
    bounce_ms: int = field(default=20, metadata=bounds(0, 500))

    @property
    def bounce_s(self) -> float | None:
        """gpiozero's ``bounce_time`` (``None`` disables debouncing)."""
        return self.bounce_ms / 1000 if self.bounce_ms else None


@dataclass(frozen=True, slots=True, kw_only=True)
class LedProfile:
    """The status LEDs. Which keys apply depends on ``kind``:

    - ``led`` / ``pwmled``: ``pin`` (``pwmled`` can dim and pulse).
    - ``rgbled``: ``red_pin``, ``green_pin``, ``blue_pin``, ``pwm``.
    - ``apa102``: ``count``, ``brightness``, ``color_order`` and either
      ``spi_bus`` + ``spi_device`` (hardware SPI; the ReSpeaker) or
      ``clock_pin`` + ``data_pin`` (bit-banged; the Voice Bonnet).
    - ``none``: no LEDs.
    """

    kind: LedKind = "none"
    pin: int | None = field(default=None, metadata=_BCM_PIN)
    red_pin: int | None = field(default=None, metadata=_BCM_PIN)
    green_pin: int | None = field(default=None, metadata=_BCM_PIN)
    blue_pin: int | None = field(default=None, metadata=_BCM_PIN)
    active_high: bool = True
    """False for a common-anode RGB LED or an LED wired from 3V3 to the pin."""
    pwm: bool = True
    """rgbled only: drive the colour pins with PWM (needed for dim colours and pulses)."""
    count: int = field(default=1, metadata=bounds(1, 256))
    spi_bus: int | None = field(default=None, metadata=bounds(0, 6))
    spi_device: int | None = field(default=None, metadata=bounds(0, 2))
    clock_pin: int | None = field(default=None, metadata=_BCM_PIN)
    data_pin: int | None = field(default=None, metadata=_BCM_PIN)
    brightness: float = field(default=0.25, metadata=bounds(0.0, 1.0))
    """apa102 only: the 5-bit global brightness, as a fraction (these LEDs are glaring)."""
    color_order: Literal["bgr", "brg", "gbr", "grb", "rbg", "rgb"] = "bgr"
    """apa102 only: the order the colour bytes go on the wire (APA102: blue, green, red)."""

    def __post_init__(self) -> None:
        # build() turns a ValueError into a ConfigError naming the file and [leds].
        required: dict[str, tuple[str, ...]] = {
            "led": ("pin",),
            "pwmled": ("pin",),
            "rgbled": ("red_pin", "green_pin", "blue_pin"),
        }
        for name in required.get(self.kind, ()):
            if getattr(self, name) is None:
                raise ValueError(f"kind = {self.kind!r} needs {name}")
        if self.kind == "apa102":
            spi = (self.spi_bus, self.spi_device)
            pins = (self.clock_pin, self.data_pin)
            has_spi = None not in spi
            has_pins = None not in pins
            if has_spi == has_pins:
                raise ValueError(
                    "kind = 'apa102' needs either spi_bus + spi_device (hardware SPI) "
                    "or clock_pin + data_pin (bit-banged), not both and not neither"
                )

    @property
    def uses_spi_device(self) -> bool:
        """True when the LEDs are written through ``/dev/spidev<bus>.<device>``."""
        return self.kind == "apa102" and self.spi_bus is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioProfile:
    """ALSA names for the board's sound card; they fill ``[audio]`` when it is left default."""

    capture_device: str = "default"
    """ALSA PCM for the microphone(s): a name from the board's asound.conf or ``plughw:CARD=…``."""
    playback_device: str = "default"
    mixer_card: str = "default"
    """The card whose mixer SetVolume moves (``amixer -c <mixer_card>``)."""
    mixer_control: str | None = None
    """Simple mixer control name (``amixer -c <card> scontrols``); unset = scan."""
    input_channels: int = field(default=1, metadata=bounds(1, 8))
    mic_channel: int = field(default=0, metadata=bounds(0, 7))
    device_rate_hz: int | None = field(default=None, metadata=bounds(8000, 192000))
    """Open both directions at this rate (codecs with one shared clock need the same rate)."""

    def __post_init__(self) -> None:
        if self.mic_channel >= self.input_channels:
            raise ValueError(
                f"mic_channel = {self.mic_channel} but the capture device has only "
                f"{self.input_channels} channel(s) (channels count from 0)"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardFile:
    """The TOML layout of a profile, as :func:`build` checks it."""

    description: str = ""
    asound_conf: str | None = None
    button: ButtonProfile
    leds: LedProfile = field(default_factory=LedProfile)
    audio: AudioProfile = field(default_factory=AudioProfile)


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardProfile:
    """A loaded profile: what :class:`BoardFile` says plus where it came from."""

    name: str
    path: Path
    description: str
    button: ButtonProfile
    leds: LedProfile
    audio: AudioProfile
    asound_conf: Path | None
    """Absolute path of the ALSA configuration this board needs, if any."""

    @property
    def gpio_pins(self) -> dict[str, int]:
        """Every GPIO the profile claims, by role (``huxleyctl doctor`` checks they are free).

        Pins behind ``/dev/spidev`` belong to the kernel's SPI driver and are not listed.
        """
        leds = self.leds
        roles = {
            "button": self.button.pin,
            "led": leds.pin,
            "led_red": leds.red_pin,
            "led_green": leds.green_pin,
            "led_blue": leds.blue_pin,
            "led_clock": leds.clock_pin,
            "led_data": leds.data_pin,
        }
        return {role: pin for role, pin in roles.items() if pin is not None}

    def pins_in_use(self) -> dict[str, int]:
        """The GPIOs the daemon opens, by key in the profile (``button.pin``,
        ``leds.red_pin``): only the LED keys its ``kind`` uses."""
        used = {"button.pin": self.button.pin}
        leds = self.leds
        names = {
            "led": ("pin",),
            "pwmled": ("pin",),
            "rgbled": ("red_pin", "green_pin", "blue_pin"),
            "apa102": () if leds.uses_spi_device else ("clock_pin", "data_pin"),
        }.get(leds.kind, ())
        for key in names:
            pin = getattr(leds, key)
            if pin is not None:
                used[f"leds.{key}"] = pin
        return used


def check_pins_distinct(board: BoardProfile) -> None:
    """Each GPIO is opened once: a pin two roles claim (the button and an LED
    on GPIO17, red = green) would stop the start at the second open
    (gpiozero's GPIOPinInUse), so the profile is refused here, naming both keys."""
    seen: dict[int, str] = {}
    for key, pin in board.pins_in_use().items():
        if pin in seen:
            raise ConfigError(
                str(board.path),
                key,
                f"expected a GPIO no other role uses: GPIO{pin} is already {seen[pin]}",
            )
        seen[pin] = key


def available_boards(boards_dir: Path) -> list[str]:
    """Names of the profiles in ``boards_dir``, sorted (empty if the folder is missing)."""
    if not boards_dir.is_dir():
        return []
    return sorted(p.stem for p in boards_dir.glob("*.toml"))


def load_board(name: str, boards_dir: Path, *, config_file: str | None = None) -> BoardProfile:
    """Load ``<boards_dir>/<name>.toml``.

    Raises :class:`ConfigError` when the board is unknown (listing the ones
    that exist), the TOML is malformed, or a key is wrong. An unknown board
    names ``config_file`` (where ``hardware.board`` is set; ``boards_dir``
    when not given); a mistake inside a profile names the profile's path, so
    the admin knows which file to open.
    """
    where = config_file or str(boards_dir)
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(
            where, "hardware.board", f"expected a board name from {boards_dir}, got {name!r}"
        )
    path = boards_dir / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(available_boards(boards_dir)) or f"none: {boards_dir} has no *.toml"
        raise ConfigError(
            where,
            "hardware.board",
            f"unknown board {name!r} (expected one of {boards_dir}: {known})",
        )
    try:
        with path.open("rb") as handle:
            table = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot be read: {exc.strerror}") from exc
    spec = build(BoardFile, table, file=str(path))
    asound: Path | None = None
    if spec.asound_conf is not None:
        asound = (path.parent / spec.asound_conf).resolve()
        if not asound.is_file():
            raise ConfigError(str(path), "asound_conf", f"{asound} does not exist")
    board = BoardProfile(
        name=name,
        path=path,
        description=spec.description,
        button=spec.button,
        leds=spec.leds,
        audio=spec.audio,
        asound_conf=asound,
    )
    check_pins_distinct(board)
    return board
