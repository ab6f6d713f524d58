"""Errors of the control socket and ``huxleyctl``.

They hang off the one tree in :mod:`huxleyd.errors` (this package may not
edit that module; these belong there as a ``ControlError`` branch)::

    HuxleydError
    └── ControlError                      the control socket and its client
        ├── ControlProtocolError (ValueError)   a line that breaks the wire format
        ├── ControlSocketInUseError (OSError)   another daemon listens on the path
        ├── DaemonUnreachableError (ConnectionError)  no daemon, or no permission
        └── CommandFailedError            a command was refused or failed
"""

from __future__ import annotations

from huxleyd.errors import HuxleydError


class ControlError(HuxleydError):
    """Root of the control socket's errors."""


class ControlProtocolError(ControlError, ValueError):
    """A request or reply line does not follow the wire format.

    The message is one line that says what was wrong and what was expected;
    ``request_id`` is the id of the offending request when it could be read.
    """

    def __init__(self, message: str, *, request_id: int | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


class ControlSocketInUseError(ControlError, OSError):
    """The socket path is taken: a live daemon listens there, or it is not a socket."""


class DaemonUnreachableError(ControlError, ConnectionError):
    """``huxleyctl`` could not talk to the daemon (not running, or permission denied)."""


class CommandFailedError(ControlError):
    """A command was refused or failed; the message is one line for the user.

    The daemon's handler raises it (``say`` while offline, say) and the
    server sends the message as the error reply; the client raises it when
    a reply says ``ok: false``.
    """
