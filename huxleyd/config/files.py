"""Can the daemon read this file? Asked for the identity that will really read it.

Layer: a leaf (the standard library only). :func:`huxleyd.config.preflight.preflight`
checks every file the daemon will read before it opens a device; ``huxleyctl
doctor`` asks the same questions. Run as root (``sudo huxleyd --check-config``,
``sudo huxleyctl doctor``) the question is asked for the service user the
unit runs the daemon as, since root can read anything and would say "ok" to a
key file the service then cannot open.

Every problem is a :class:`~huxleyd.errors.ConfigError` naming the file that
sets the path, the key, and what was expected, in one line.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from huxleyd.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Reader:
    """Who reads the daemon's files: this process, or (as root) the service user."""

    name: str
    uid: int
    gids: frozenset[int]
    is_self: bool
    """True: ask the kernel (``os.access``, which knows ACLs); False: read the mode bits."""

    @classmethod
    def this_process(cls) -> Reader:
        uid = os.geteuid()
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        return cls(name, uid, frozenset({os.getegid(), *os.getgroups()}), is_self=True)

    @classmethod
    def user(cls, name: str) -> Reader | None:
        """The account ``name`` and its groups; None when it does not exist here."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            return None
        gids = frozenset(os.getgrouplist(name, entry.pw_gid))
        return cls(name, entry.pw_uid, gids, is_self=False)

    @classmethod
    def for_service(cls, service_user: str, *, euid: int | None = None) -> Reader:
        """The service user when running as root and it exists; else this process."""
        uid = os.geteuid() if euid is None else euid
        if uid == 0:
            other = cls.user(service_user)
            if other is not None and other.uid != uid:
                return other
        return cls.this_process()

    def describe(self) -> str:
        return f"user {self.name!r}"

    def _allowed(self, st: os.stat_result, owner_bit: int, group_bit: int, other_bit: int) -> bool:
        if self.uid == 0:
            return True
        if st.st_uid == self.uid:
            return bool(st.st_mode & owner_bit)
        if st.st_gid in self.gids:
            return bool(st.st_mode & group_bit)
        return bool(st.st_mode & other_bit)

    def can_write(self, directory: Path) -> bool:
        """True when this reader may create files in ``directory``."""
        if self.is_self:
            return os.access(directory, os.W_OK | os.X_OK)
        try:
            st = os.stat(directory)
        except OSError:
            return False
        writable = self._allowed(st, stat.S_IWUSR, stat.S_IWGRP, stat.S_IWOTH)
        return writable and self._allowed(st, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)

    def can_read(self, path: Path) -> bool:
        """True when this reader may open ``path`` for reading (and reach it)."""
        return self.blocked_at(path) is None

    def blocked_at(self, path: Path) -> Path | None:
        """The first of ``path``'s directories this reader cannot enter, or ``path``
        itself when it cannot read it; None when it can."""
        if self.is_self:
            return None if os.access(path, os.R_OK) else path
        try:
            for parent in reversed(path.absolute().parents):
                if not self._allowed(os.stat(parent), stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
                    return parent
            if self._allowed(os.stat(path), stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH):
                return None
        except OSError:
            pass
        return path


def owner_and_mode(path: Path) -> str:
    """``mode 0600, owner root:root`` for messages (never the content)."""
    st = os.stat(path)
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return f"mode {stat.S_IMODE(st.st_mode):04o}, owner {user}:{group}"


def check_file(
    path: Path, *, file: str, key: str, reader: Reader, what: str, non_empty: bool = True
) -> None:
    """``path`` is a regular file ``reader`` can read, and (``non_empty``) has content.

    ``what`` says what the file holds ("the API key"), for the message.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(
            file, key, f"expected a file with {what}: {path} does not exist"
        ) from None
    except OSError as exc:
        raise ConfigError(
            file, key, f"expected a file with {what}: {path}: {exc.strerror}"
        ) from exc
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            file, key, f"expected a file with {what}: {path} is a directory"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(file, key, f"expected a regular file with {what}: {path} is not one")
    _check_readable(path, file=file, key=key, reader=reader, kind="a file")
    if non_empty and (st.st_size == 0 or _blank(path)):
        raise ConfigError(file, key, f"expected a file with {what}: {path} is empty")


def _blank(path: Path) -> bool:
    """True when the file holds only whitespace. The bytes never leave this function."""
    if not os.access(path, os.R_OK):
        return False  # this process may not look; readability was checked for the reader
    with path.open("rb") as fh:
        return not fh.read(4096).strip()


def check_directory(path: Path, *, file: str, key: str, reader: Reader, what: str) -> None:
    """``path`` is an existing directory ``reader`` can list."""
    if not path.exists():
        raise ConfigError(file, key, f"expected a directory with {what}: {path} does not exist")
    if not path.is_dir():
        raise ConfigError(file, key, f"expected a directory with {what}: {path} is not a directory")
    _check_readable(path, file=file, key=key, reader=reader, kind="a directory")


def _check_readable(path: Path, *, file: str, key: str, reader: Reader, kind: str) -> None:
    blocked = reader.blocked_at(path)
    if blocked is None:
        return
    where = f"{path} has" if blocked == path else f"it cannot enter {blocked}, which has"
    raise ConfigError(
        file,
        key,
        f"expected {kind} {reader.describe()} can read: {where} {owner_and_mode(blocked)}",
    )
