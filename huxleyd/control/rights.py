"""Who may run which control command: decided from the peer's credentials.

Pure logic; the server reads the credentials (``SO_PEERCRED`` and
``SO_PEERGROUPS``, with :mod:`~huxleyd.control.peers`) and asks
:meth:`Rights.refusal` before dispatching. ::

    kind      commands                                         who
    reading   status, watch, levels, doctor, skills, volume,   root, the daemon's user,
              mute                                             group huxley-control
    changing  volume N, mute on|off, say, ptt, stop, event     root, the daemon's user,
                                                               group huxley-operator
    install   huxleyctl skills install/remove (no socket)      root only

The socket file (mode 0660, group ``control.socket_group``) lets the
reading group connect at all; an operator is in both groups. A refusal
names the group to join and the command that adds the user to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from huxleyd.control.protocol import Command, MuteArgs, Request, VolumeArgs

DEFAULT_READERS = "huxley-control"
DEFAULT_OPERATORS = "huxley-operator"


class Right(StrEnum):
    """What a command does to the device."""

    READ = "reading"
    CHANGE = "changing"


_READING = frozenset(
    {Command.STATUS, Command.WATCH, Command.LEVELS, Command.DOCTOR, Command.SKILLS}
)
_CHANGING = frozenset({Command.SAY, Command.PTT, Command.STOP, Command.EVENT, Command.ANNOUNCE})
_EITHER = frozenset({Command.VOLUME, Command.MUTE})
"""Reading without an argument, changing with one."""
assert set(Command) == _READING | _CHANGING | _EITHER, "every command has a right"


def right_of(request: Request) -> Right:
    """The right ``request`` needs (``volume`` reads without a level, changes with one)."""
    if request.cmd is Command.VOLUME:
        assert isinstance(request.args, VolumeArgs)
        return Right.READ if request.args.level is None else Right.CHANGE
    if request.cmd is Command.MUTE:
        assert isinstance(request.args, MuteArgs)
        return Right.READ if request.args.muted is None else Right.CHANGE
    return Right.READ if request.cmd in _READING else Right.CHANGE


@dataclass(frozen=True, slots=True)
class Peer:
    """The credentials of a connected process, as the kernel gave them."""

    uid: int
    gid: int
    groups: frozenset[int]
    """Its supplementary groups (``SO_PEERGROUPS``)."""
    user: str = ""
    """Its user name, for the refusal line (the uid when unknown)."""

    def in_any(self, gids: Iterable[int | None]) -> bool:
        wanted = {g for g in gids if g is not None}
        return bool(wanted & (self.groups | {self.gid}))


@dataclass(frozen=True, slots=True)
class Group:
    """A group by name, and its gid (None: it does not exist on this system)."""

    name: str
    gid: int | None


@dataclass(frozen=True, slots=True)
class Rights:
    """The daemon's user and the two groups; root may do everything."""

    daemon_uid: int
    readers: Group
    operators: Group

    def allowed(self, peer: Peer | None, right: Right) -> bool:
        if peer is None:  # no credentials (not Linux): the socket's mode decided
            return True
        if peer.uid in (0, self.daemon_uid):
            return True
        if right is Right.READ:
            return peer.in_any([self.readers.gid, self.operators.gid])
        return peer.in_any([self.operators.gid])

    def refusal(self, peer: Peer | None, request: Request) -> str | None:
        """None when ``peer`` may run ``request``; else one line naming the group to join."""
        right = right_of(request)
        if self.allowed(peer, right):
            return None
        assert peer is not None
        group = self.readers if right is Right.READ else self.operators
        who = peer.user or f"uid {peer.uid}"
        missing = "" if group.gid is not None else f" (create it: groupadd --system {group.name})"
        return (
            f"{request.cmd.value} ({right.value}) needs group {group.name}{missing}, and {who} "
            f"is not in it; join it: sudo usermod -aG {group.name} {peer.user or peer.uid}, "
            "then log in again"
        )
