"""One daemon per state directory: a lock on the directory itself.

Layer: wiring (a file lock). Two daemons on one configuration would write
one database. The control socket used to be the only guard, and a removed
socket (or its folder) let a second one start. Now the start takes
``flock(LOCK_EX | LOCK_NB)`` on the state directory, opened read-only (so it
works on a read-only card too), and holds it until the process ends; the
kernel drops it when the process dies, so a crash leaves no stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from huxleyd.errors import HuxleydError
from huxleyd.logs import get_logger

log = get_logger("huxleyd.daemon")


class AlreadyRunningError(HuxleydError):
    """Another huxleyd holds the state directory's lock."""


class InstanceLock:
    """``flock`` on ``state_dir``; :meth:`acquire` raises :class:`AlreadyRunningError`."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock. False (and a log line) when the directory cannot be opened:
        the daemon then runs unguarded rather than not at all."""
        with contextlib.suppress(OSError):  # read-only: opened as it is, or said below
            self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            log.warning("instance_lock_unavailable", dir=str(self.state_dir), error=exc.strerror)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunningError(
                f"another huxleyd is running on the state directory {self.state_dir} "
                "(it holds its lock); stop it first (systemctl stop huxleyd)"
            ) from None
        except OSError as exc:
            os.close(fd)
            log.warning("instance_lock_unavailable", dir=str(self.state_dir), error=exc.strerror)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        """Idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
