"""Control socket settings (``[control]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.settings_schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlSettings:
    """Where ``huxleyctl`` finds the daemon. Mode 0660, group ``huxley``.

    Who may talk to the daemon is decided by the socket file's mode and
    group alone: members of ``socket_group`` (and root) connect, others get
    "permission denied" from the kernel.
    """

    socket_path: Path = Path("/run/huxleyd/control.sock")
    socket_group: str | None = "huxley"
    """Group owning the socket; None (or a group that does not exist) leaves the daemon's own."""
    request_timeout_s: float = field(default=10.0, metadata=bounds(0.1, 120.0))
    """Longest a command may take (for ``levels``: the longest wait for one sample)."""
    idle_timeout_s: float = field(default=600.0, metadata=bounds(1.0, 86400.0))
    """A client that sends nothing for this long is disconnected."""
    max_clients: int = field(default=16, metadata=bounds(1, 1024))
    """Connections served at once; at the limit the longest-idle one makes room."""
    max_clients_per_uid: int = field(default=8, metadata=bounds(1, 1024))
    """Connections one user (uid) may hold; at the limit their longest-idle one makes room."""
