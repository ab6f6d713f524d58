"""Errors of the control socket and ``huxleyctl``: the ``ControlError`` branch
of the one tree in :mod:`huxleyd.errors`, re-exported here for the package."""

from __future__ import annotations

from huxleyd.errors import (
    CommandFailedError,
    ControlError,
    ControlProtocolError,
    ControlSocketInUseError,
    DaemonUnreachableError,
)

__all__ = [
    "CommandFailedError",
    "ControlError",
    "ControlProtocolError",
    "ControlSocketInUseError",
    "DaemonUnreachableError",
]
