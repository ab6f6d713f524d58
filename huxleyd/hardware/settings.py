"""Hardware settings (``[hardware]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class LedLimits:
    """How long a transient LED state may last before the LEDs fall back to idle
    (``[hardware.led_limits]``).

    These are a safety net, not the normal exit: the coordinator moves the
    LEDs on; these only stop a missed transition from leaving the speaker
    "listening" all night.
    """

    listening_s: float = field(default=45.0, metadata=bounds(1.0, 3600.0))
    thinking_s: float = field(default=30.0, metadata=bounds(1.0, 3600.0))
    speaking_s: float = field(default=300.0, metadata=bounds(1.0, 3600.0))
    error_s: float = field(default=5.0, metadata=bounds(0.5, 3600.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareSettings:
    """Which board profile to use and how the button behaves.

    ``pin_factory`` is passed to gpiozero as ``GPIOZERO_PIN_FACTORY`` when
    set; when unset gpiozero chooses, and on a machine without GPIO the
    daemon falls back to ``mock`` and says so.
    """

    board: str = "gpio-basic"
    boards_dir: Path = Path("/opt/huxleyd/share/hw")
    """Where the installer puts the shipped profiles (hw/ in the repo)."""
    pin_factory: str | None = None
    max_hold_s: float = field(default=30.0, metadata=bounds(1.0, 600.0))
    """A hold longer than this ends the turn instead of streaming forever."""
    led_limits: LedLimits = field(default_factory=LedLimits)

    def __post_init__(self) -> None:
        if self.led_limits.listening_s <= self.max_hold_s:
            raise ValueError(
                f"led_limits.listening_s ({self.led_limits.listening_s}) must be longer "
                f"than max_hold_s ({self.max_hold_s}), or the LEDs stop showing a hold "
                "that is still streaming"
            )
