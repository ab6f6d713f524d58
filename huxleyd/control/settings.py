"""Control socket settings (``[control]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlSettings:
    """Where ``huxleyctl`` finds the daemon. Mode 0660, group ``huxley``."""

    socket_path: Path = Path("/run/huxleyd/control.sock")
    socket_group: str | None = "huxley"
