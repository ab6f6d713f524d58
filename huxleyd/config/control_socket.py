"""Control socket settings (``[control]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.schema import bounds

MAX_SOCKET_PATH_BYTES = 107
"""``sun_path`` is 108 bytes on Linux, NUL included: the longest socket path."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlSettings:
    """Where ``huxleyctl`` finds the daemon, and who may do what there.

    Members of ``socket_group`` (and root) connect and may read (status,
    watch, levels, doctor, skills); members of ``operator_group`` may also
    change the device (volume N, say, ptt, stop, event). See
    :mod:`huxleyd.control.rights`.
    """

    socket_path: Path = Path("/run/huxleyd/control.sock")
    socket_group: str | None = "huxley-control"
    """Group owning the socket (mode 0660): who may connect and read. Not the daemon's
    own group, whose members could read its state files. None (or a group that does
    not exist) leaves the daemon's own."""
    operator_group: str = "huxley-operator"
    """Members may also change the device; they must be in ``socket_group`` to connect."""
    request_timeout_s: float = field(default=10.0, metadata=bounds(0.1, 120.0))
    """Longest a command may take (for ``levels``: the longest wait for one sample)."""
    idle_timeout_s: float = field(default=600.0, metadata=bounds(1.0, 86400.0))
    """A client that sends nothing for this long is disconnected."""
    max_clients: int = field(default=16, metadata=bounds(1, 1024))
    """Connections served at once; at the limit the longest-idle one makes room."""
    max_clients_per_uid: int = field(default=8, metadata=bounds(1, 1024))
    max_watches_per_uid: int = field(default=2, metadata=bounds(1, 1024))
    """``watch`` streams one reader (not root, not an operator) may hold at once."""
    """Connections one user (uid) may hold; at the limit their longest-idle one makes room."""
