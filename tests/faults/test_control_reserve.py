"""One reader cannot lock root or the operator out of the control socket.

Before: a user in the control group only, opening connections in bursts,
took the daemon to 1024 of 1024 descriptors and root's ``status`` failed
with "Resource temporarily unavailable"; two readers holding 8 ``watch``
streams each left root and the operator "too many huxleyctl clients (max
16)". Here real local users (``useradd``; clients run as them with
``setpriv``) burst thousands of connections and hold live watchers at the
real server on a unix socket, and root and an operator ask ``status``.
Bounded: every client holds for at most 120 s and is ended by the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.client import ControlClient
from huxleyd.control.server import ControlServer, reserve
from tests.fakes.control_handler import FakeControlHandler
from tests.fakes.unprivileged import why_others_cannot_run

PEER = Path(__file__).with_name("control_peer.py")
BURST = int(os.environ.get("HX_BURST", "2000"))
"""Connections each reader opens in one burst."""


@dataclass(frozen=True, slots=True)
class Users:
    readers: str
    operators: str
    reader_1: str
    reader_2: str
    operator: str


@pytest.fixture
def users() -> Iterator[Users]:
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("useradd", "setpriv")):
        pytest.skip("needs root, useradd and setpriv")
    problem = why_others_cannot_run(sys.executable)  # the readers' clients are this Python
    if problem is not None:
        pytest.skip(problem)
    tag = uuid.uuid4().hex[:6]
    made = Users(f"hxr{tag}", f"hxo{tag}", f"hxa{tag}", f"hxb{tag}", f"hxp{tag}")

    def run(*argv: str) -> None:
        subprocess.run(argv, check=True, capture_output=True)

    run("groupadd", "--system", made.readers)
    run("groupadd", "--system", made.operators)
    for user, groups in (
        (made.reader_1, made.readers),
        (made.reader_2, made.readers),
        (made.operator, f"{made.readers},{made.operators}"),
    ):
        run("useradd", "--system", "--no-create-home", "-G", groups, user)
    try:
        yield made
    finally:
        for user in (made.reader_1, made.reader_2, made.operator):
            subprocess.run(["userdel", user], check=False, capture_output=True)
        for group in (made.readers, made.operators):
            subprocess.run(["groupdel", group], check=False, capture_output=True)


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A folder the test users may enter (pytest's tmp_path is root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="hxsock-"))
    folder.chmod(0o755)
    shutil.copy2(PEER, folder / "control_peer.py")
    # Compiled once here: the peers import it rather than compile it each (the
    # interpreter's compiler once failed under this load: "AST constructor
    # recursion depth mismatch").
    py_compile.compile(str(folder / "control_peer.py"), cfile=str(folder / "control_peer.pyc"))
    (folder / "control_peer.pyc").chmod(0o644)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def as_user(user: str, folder: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "setpriv",
        f"--reuid={user}",
        f"--regid={user}",
        "--init-groups",
        "--",
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(folder)!r}); import control_peer; control_peer.main()",
        str(folder / "control.sock"),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def counts(proc: asyncio.subprocess.Process) -> dict[str, int]:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 120)
    assert line, "the peer died"
    result: dict[str, int] = json.loads(line)
    return result


async def release(*procs: asyncio.subprocess.Process) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    for proc in procs:
        await asyncio.wait_for(proc.wait(), 60)


def root_status(path: Path) -> float:
    started = time.monotonic()
    with ControlClient(path, timeout_s=10) as client:
        client.status()
    return time.monotonic() - started


async def operator_status(users: Users, folder: Path) -> dict[str, Any]:
    proc = await as_user(users.operator, folder, "status")
    assert proc.stdout is not None
    out = await asyncio.wait_for(proc.stdout.read(), 60)
    await proc.wait()
    result: dict[str, Any] = json.loads(out)
    return result


def server_for(users: Users, folder: Path) -> ControlServer:
    settings = ControlSettings(
        socket_path=folder / "control.sock",
        socket_group=users.readers,
        operator_group=users.operators,
    )
    return ControlServer(FakeControlHandler(), settings)


async def test_a_burst_of_thousands_from_two_readers_leaves_root_and_the_operator_an_answer(
    users: Users, socket_dir: Path
) -> None:
    async with server_for(users, socket_dir) as server:
        one = await as_user(users.reader_1, socket_dir, "burst", str(BURST))
        two = await as_user(users.reader_2, socket_dir, "burst", str(BURST))
        first, second = await counts(one), await counts(two)
        held = server.client_count
        settings = ControlSettings()
        assert held <= settings.max_clients - reserve(settings.max_clients)
        took = await asyncio.to_thread(root_status, socket_dir / "control.sock")
        operator = await operator_status(users, socket_dir)
        await release(one, two)
    report = {"burst": [first, second], "held": held, "root_s": took, "operator": operator}
    print(f"\ncontrol reserve, burst: {json.dumps(report)}")
    for one_reader in (first, second):
        assert one_reader["connected"] == BURST, "every connect was accepted (none failed)"
        assert one_reader["closed"] + one_reader["refused"] >= BURST - 20, "closed, not held"
    assert operator["ok"] is True
    assert took < 2.0 and operator["s"] < 2.0, report  # a bound on a loaded machine


async def test_live_watchers_of_two_readers_leave_root_and_the_operator_an_answer(
    users: Users, socket_dir: Path
) -> None:
    async with server_for(users, socket_dir) as server:
        one = await as_user(users.reader_1, socket_dir, "watch", "8")
        two = await as_user(users.reader_2, socket_dir, "watch", "8")
        first, second = await counts(one), await counts(two)
        limit = ControlSettings().max_watches_per_uid
        # Each keeps its limit of live watches; the rest were refused or closed.
        assert first["watching"] == limit and second["watching"] == limit, (first, second)
        held = server.client_count
        took = await asyncio.to_thread(root_status, socket_dir / "control.sock")
        operator = await operator_status(users, socket_dir)
        await release(one, two)
    print(f"\ncontrol reserve, watchers: held={held} root_s={took:.4f} operator={operator}")
    assert operator["ok"] is True
    assert took < 2.0 and operator["s"] < 2.0


async def test_when_readers_fill_every_place_root_closes_a_quiet_watch_for_its_own(
    users: Users, socket_dir: Path
) -> None:
    """With two places and a watch each may keep, readers cannot take root's."""
    settings = ControlSettings(
        socket_path=socket_dir / "control.sock",
        socket_group=users.readers,
        operator_group=users.operators,
        max_clients=2,
        max_watches_per_uid=1,
    )
    async with ControlServer(FakeControlHandler(), settings) as server:
        one = await as_user(users.reader_1, socket_dir, "watch", "1")
        assert await counts(one) == {"watching": 1, "refused": 0}
        assert server.client_count == 1  # readers may hold 2 - reserve(2) = 1 place
        two = await as_user(users.reader_2, socket_dir, "burst", "5")
        assert (await counts(two))["refused"] == 5, "no reader gets the reserve"
        took = await asyncio.to_thread(root_status, socket_dir / "control.sock")
        assert took < 2.0
        await release(one, two)
