"""Hardware settings (``[hardware]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.settings_schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareSettings:
    """Which board profile to use and how the button behaves.

    ``pin_factory`` is passed to gpiozero as ``GPIOZERO_PIN_FACTORY`` when
    set; when unset gpiozero chooses, and on a machine without GPIO the
    daemon falls back to ``mock`` and says so.
    """

    board: str = "gpio-basic"
    boards_dir: Path = Path("hw")
    pin_factory: str | None = None
    max_hold_s: float = field(default=30.0, metadata=bounds(1.0, 600.0))
    """A hold longer than this ends the turn instead of streaming forever."""
