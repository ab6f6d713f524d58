"""Commands × who may run them (README, "Who may do what"): one test per row.

A forked ``huxleyctl`` runs as nobody with the supplementary groups of the
case (``setgroups``); the server reads them from the socket
(``SO_PEERCRED``, ``SO_PEERGROUPS``), as it would for a real user.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.protocol import Args, Command, MuteArgs, NoArgs, Request, VolumeArgs
from huxleyd.control.rights import Peer, Right, right_of
from tests.fakes.control_handler import FakeControlHandler

from .test_cli import _cli_in_child
from .threaded import OPERATORS_GID, READERS_GID, TEST_RIGHTS, serve_in_thread

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching to nobody needs root")

READING = [
    ["status"],
    ["watch", "--seconds", "0.1"],
    ["levels", "--seconds", "0.1"],
    ["doctor"],
    ["skills"],
    ["volume"],
    ["mute"],
    ["mute", "status"],
]
CHANGING = [
    ["volume", "50"],
    ["mute", "on"],
    ["mute", "off"],
    ["say", "--no-wait", "hello"],
    ["ptt", "tap"],
    ["stop"],
    ["event", "k"],
    ["announce", "--all", "hello"],
]


PRELOAD = (
    "colorsys",
    "huxleyd.control.render",
    "huxleyd.control.watch",
    "huxleyd.control.doctor_cli",
    "huxleyd.control.doctor",
    "rich.console",
    "rich.table",
    "rich.live",
    "rich.text",
)


def refusal(cmd: str, right: str, group: str) -> str:
    return (
        f"huxleyctl: {cmd}: {cmd} ({right}) needs group {group}, and nobody is not in it; "
        f"join it: sudo usermod -aG {group} nobody, then log in again"
    )


@pytest.fixture
def fake() -> FakeControlHandler:
    return FakeControlHandler(sample_interval_s=0.02)


@pytest.fixture
def socket_path(fake: FakeControlHandler) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="hxr"))
    base.chmod(0o755)
    path = base / "control.sock"
    settings = ControlSettings(socket_path=path, socket_group=None)
    try:
        with serve_in_thread(fake, settings, rights=TEST_RIGHTS):
            path.chmod(0o666)  # the socket's mode lets everyone in: the rights decide
            yield path
    finally:
        shutil.rmtree(base)


def run(path: Path, argv: list[str], groups: list[int]) -> tuple[int, str]:
    # What the commands import lazily, imported now: nobody cannot read this
    # interpreter's standard library on the test machine (it lives under /root).
    for module in PRELOAD:
        importlib.import_module(module)
    return _cli_in_child(
        ["--socket", str(path), "--config", "/nonexistent.toml", *argv],
        as_nobody=True,
        groups=groups,
    )


@pytest.mark.parametrize("argv", READING, ids=lambda a: " ".join(a))
def test_reading_needs_the_control_group(socket_path: Path, argv: list[str]) -> None:
    code, out = run(socket_path, argv, groups=[])
    assert (code, out.splitlines()[-1]) == (1, refusal(argv[0], "reading", "huxley-control"))
    code, out = run(socket_path, argv, groups=[READERS_GID])
    assert "needs group" not in out
    assert code == (1 if argv[0] == "doctor" else 0), out  # the fake's doctor has a failure


@pytest.mark.parametrize("argv", CHANGING, ids=lambda a: " ".join(a))
def test_changing_needs_the_operator_group(
    socket_path: Path, fake: FakeControlHandler, argv: list[str]
) -> None:
    for groups in ([], [READERS_GID]):
        code, out = run(socket_path, argv, groups=groups)
        assert (code, out.splitlines()) == (1, [refusal(argv[0], "changing", "huxley-operator")])
    assert fake.calls == []  # nothing reached the daemon
    code, out = run(socket_path, argv, groups=[READERS_GID, OPERATORS_GID])
    assert code in (0, 1) and "needs group" not in out  # event: "no skill handled" is 1


def test_installing_skills_is_roots() -> None:
    for action in ("install", "remove"):
        code, out = _cli_in_child(["skills", action, "huxley-skill-x"], as_nobody=True)
        assert code == 1
        assert out.startswith(f"huxleyctl: skills {action} is root's: the skills environment ")
        assert out.rstrip().endswith("; run it with sudo")


def test_every_command_has_its_row() -> None:
    """The table and the code agree: each command's right, as the README lists it."""
    unset: dict[Command, Args] = {Command.VOLUME: VolumeArgs(None), Command.MUTE: MuteArgs(None)}
    rights = {cmd: right_of(Request(1, cmd, unset.get(cmd, NoArgs()))) for cmd in Command}
    either = set(unset)  # reading without an argument, changing with one
    readme = {Command(a[0]) for a in READING} - either
    assert {c for c, r in rights.items() if r is Right.READ} == readme | either
    assert {c for c, r in rights.items() if r is Right.CHANGE} == {
        Command(a[0]) for a in CHANGING
    } - either
    assert right_of(Request(1, Command.MUTE, MuteArgs(True))) is Right.CHANGE


def test_root_and_the_daemons_user_may_do_everything() -> None:
    say = Request(1, Command.SAY, NoArgs())
    for uid in (0, TEST_RIGHTS.daemon_uid):
        assert TEST_RIGHTS.refusal(Peer(uid, 65534, frozenset()), say) is None
