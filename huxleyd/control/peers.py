"""Who is on the other end of a control connection, and which groups give rights.

Adapter layer for :mod:`~huxleyd.control.rights` (pure): reads the connecting
process's credentials off the socket (``SO_PEERCRED``, ``SO_PEERGROUPS``) and
looks the settings' groups up in the group database. ::

    peer = peer_of(writer)                  # None if the kernel will not say
    rights = rights_from(config.control)    # the daemon's user, readers, operators
    rights.allowed(peer, Right.CHANGE)
"""

from __future__ import annotations

import asyncio
import grp
import os
import pwd
import socket
import struct

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.rights import DEFAULT_READERS, Group, Peer, Rights

SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)
"""Linux (4.13+): the peer's supplementary groups; Python names it from 3.13 on."""
MAX_PEER_GROUPS = 256


def _peer_groups(sock: socket.socket) -> frozenset[int] | None:
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, SO_PEERGROUPS, 4 * MAX_PEER_GROUPS)
    except OSError:
        return None
    return frozenset(struct.unpack(f"{len(raw) // 4}I", raw[: len(raw) // 4 * 4]))


def peer_of(writer: asyncio.StreamWriter) -> Peer | None:
    """The connecting process's credentials (``SO_PEERCRED``, ``SO_PEERGROUPS``); None
    if unknown. Without SO_PEERGROUPS, the user's groups from the group database."""
    sock = writer.get_extra_info("socket")
    peercred = getattr(socket, "SO_PEERCRED", None)
    if sock is None or peercred is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, gid = struct.unpack("3i", creds)
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = ""
    groups = _peer_groups(sock)
    if groups is None:
        groups = frozenset(os.getgrouplist(user, gid)) if user else frozenset()
    return Peer(uid=uid, gid=gid, groups=groups, user=user)


def _gid(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def rights_from(settings: ControlSettings) -> Rights:
    """The daemon's user, the socket's group (reading) and the operator group (changing)."""
    readers = settings.socket_group or DEFAULT_READERS
    return Rights(
        daemon_uid=os.geteuid(),
        readers=Group(readers, _gid(readers)),
        operators=Group(settings.operator_group, _gid(settings.operator_group)),
    )
