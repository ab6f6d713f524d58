"""A custom ``control.socket_group`` is checked by its own gid, not the default's.

A real group is made for the test (``groupadd``), and a peer in it only
(not in the default ``huxley-control`` nor the operator group) may read.
"""

from __future__ import annotations

import grp
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.peers import rights_from
from huxleyd.control.rights import Peer, Right


@pytest.fixture
def custom_group() -> Iterator[str]:
    if os.geteuid() != 0 or shutil.which("groupadd") is None:
        pytest.skip("needs root and groupadd")
    name = f"hxt{uuid.uuid4().hex[:8]}"
    subprocess.run(["groupadd", "--system", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["groupdel", name], check=False)


def test_a_member_of_a_custom_socket_group_reads_and_others_do_not(custom_group: str) -> None:
    gid = grp.getgrnam(custom_group).gr_gid
    rights = rights_from(ControlSettings(socket_group=custom_group, operator_group="nosuchgrp"))
    assert rights.readers.name == custom_group and rights.readers.gid == gid
    member = Peer(uid=54321, gid=54321, groups=frozenset({gid}), user="")
    stranger = Peer(uid=54322, gid=54322, groups=frozenset({gid + 1}), user="")
    assert rights.allowed(member, Right.READ)
    assert not rights.allowed(member, Right.CHANGE)
    assert not rights.allowed(stranger, Right.READ)
