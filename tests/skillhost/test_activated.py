"""Skill hosts started by socket activation, as systemd starts them for the daemon.

``systemd-socket-activate --accept --inetd`` stands in for
``huxleyd-skillhost.socket`` + ``huxleyd-skillhost@.service``: one process per
connection, the connection as stdin and stdout, running the unit's own
``ExecStart`` (``python -I -m huxleyd.skillhost.hostexec ENV``). As root the
activator runs as the skill user (the unit's ``User=``), so the daemon's side
is root and the host another user, as on the device (the daemon there is
``huxley``, which cannot switch users: that is why systemd starts the host).
"""

from __future__ import annotations

import asyncio
import gc
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from huxleyd.errors import SkillHostError
from huxleyd.skillhost import hostexec
from huxleyd.skillhost.activated import (
    SOCKET,
    SOCKET_VARIABLE,
    UNKNOWN_STATUS,
    ActivatedLauncher,
    ActivatedProcess,
    activation_socket,
    parse_hello,
)
from huxleyd.skillhost.hostexec import read_mode
from huxleyd.skillhost.launchers import SKILL_USER, Launcher, launcher_for
from huxleyd.skillhost.process import inventory
from huxleyd.skillhost.skillenv import SkillsEnv
from tests.skillhost.envs import probe_wheel, python_others_exec, skills_env_with
from tests.skillhost.rig import probe_rig

ACTIVATOR = shutil.which("systemd-socket-activate")
pytestmark = pytest.mark.skipif(ACTIVATOR is None, reason="no systemd-socket-activate here")
WATCHDOG_USEC = 200_000
UNIT_FILE = Path(__file__).resolve().parents[2] / "systemd" / "huxleyd-skillhost@.service"


@dataclass
class Activator:
    launcher: ActivatedLauncher
    pings: socket.socket
    """Where the hosts' ``WATCHDOG=1`` arrive (the unit's NOTIFY_SOCKET)."""

    def pings_within(self, seconds: float) -> int:
        """The pings that arrive in the next ``seconds``."""
        deadline = time.monotonic() + seconds
        count = 0
        while (left := deadline - time.monotonic()) > 0:
            self.pings.settimeout(left)
            try:
                count += self.pings.recv(64) == b"WATCHDOG=1"
            except TimeoutError:
                break
        return count


def unit_exec_start(env: SkillsEnv) -> list[str]:
    """The template unit's ExecStart, made to run here.

    The unit runs hostexec with the daemon's venv; this checkout's venv is
    not one the skill user can run here, and hostexec needs only the standard
    library, so the skills environment's interpreter runs its file (``-I``
    implies ``-P``: the file's folder is not put on the path)."""
    line = next(
        line for line in UNIT_FILE.read_text().splitlines() if line.startswith("ExecStart=")
    )
    argv = line.removeprefix("ExecStart=").split()
    assert argv[0].endswith("/venv/bin/python") and argv[1:4] == [
        "-I",
        "-m",
        "huxleyd.skillhost.hostexec",
    ], line
    return [str(env.python), "-I", hostexec.__file__]


@pytest.fixture(scope="module")
def unit_env(probe_env: SkillsEnv, skill_user: str | None) -> SkillsEnv:
    """The probe's skills environment, of an interpreter the unit's own process can exec."""
    if skill_user is None:
        return probe_env
    python = python_others_exec(skill_user)
    if python is None:
        pytest.skip(f"no Python here that {skill_user} can exec by itself")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return skills_env_with([probe_wheel(Path(tmp))], python)
        except subprocess.CalledProcessError as exc:
            pytest.skip(f"cannot make a skills environment of {python}: {exc}")


@pytest.fixture
def activator(unit_env: SkillsEnv, skill_user: str | None) -> Iterator[Activator]:
    base = Path(tempfile.mkdtemp(prefix="huxleyd-activate-"))
    base.chmod(0o755)
    listen = base / "run" / "link"
    listen.parent.mkdir()
    notify = base / "notify"
    pings = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    pings.bind(str(notify))
    notify.chmod(0o666)
    unit_user: list[str] = []
    if skill_user is not None:  # systemd (root) starts the unit's process as its User=
        entry = pwd.getpwnam(skill_user)
        unit_user = [
            "setpriv",
            f"--reuid={entry.pw_uid}",
            f"--regid={entry.pw_gid}",
            "--clear-groups",
            "--",
        ]
    command = [
        str(ACTIVATOR),
        f"--listen={listen}",
        "--accept",
        "--inetd",
        f"-ENOTIFY_SOCKET={notify}",
        f"-EWATCHDOG_USEC={WATCHDOG_USEC}",
        *unit_user,
        *unit_exec_start(unit_env),
        str(unit_env.root),
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, cwd="/")
    try:
        deadline = time.monotonic() + 10
        while not listen.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the activator binds before it accepts: nothing to wait on
        assert listen.exists(), process.stderr.read() if process.stderr else "no stderr"
        yield Activator(ActivatedLauncher(listen, user=skill_user), pings)
    finally:
        process.terminate()
        process.wait(5)
        pings.close()
        shutil.rmtree(base, ignore_errors=True)


async def test_a_host_runs_as_the_units_user_with_nothing_of_the_daemon(
    unit_env: SkillsEnv, tmp_path: Path, activator: Activator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-to-a-skill")
    async with probe_rig(unit_env, tmp_path, launcher=activator.launcher) as rig:
        assert await rig.output("echo", text="héllo") == {"echo": "héllo"}
        who = await rig.output("whoami")
        assert rig.skill.pid not in (None, os.getpid())
        assert "OPENAI_API_KEY" not in who["env"]
        assert who["env"] == [
            "HOME",
            "LANG",
            "NOTIFY_SOCKET",
            "PATH",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONPATH",
            "WATCHDOG_USEC",
        ]
        if os.geteuid() == 0:
            assert who["uid"] == pwd.getpwnam(SKILL_USER).pw_uid != 0
            assert who["groups"] == []
        await rig.output("remember", key="colour", value="green")
        assert await rig.db.skill_storage("probe").get_setting("colour") == "green"


@pytest.mark.skipif(os.geteuid() != 0, reason="the host is another user only as root")
async def test_the_key_the_environ_and_the_state_are_refused(
    unit_env: SkillsEnv, tmp_path: Path, activator: Activator
) -> None:
    secret = tmp_path / "openai.key"
    secret.write_text("sk-the-daemons-key\n")
    secret.chmod(0o600)
    await asyncio.to_thread(tmp_path.chmod, 0o755)
    async with probe_rig(unit_env, tmp_path, launcher=activator.launcher) as rig:
        denied = {"error": "PermissionError", "errno": 13}
        for path in (secret, Path(f"/proc/{os.getpid()}/environ"), rig.db.path):
            assert await rig.output("read", path=str(path)) == denied, path


async def test_a_hung_host_stops_pinging_its_watchdog_and_its_link_is_closed(
    unit_env: SkillsEnv, tmp_path: Path, activator: Activator
) -> None:
    async with probe_rig(unit_env, tmp_path, launcher=activator.launcher, ping_every_s=0.2) as rig:
        pings = await asyncio.to_thread(activator.pings_within, 1.0)
        assert pings >= 5  # every 0.1 s while the loop runs
        call = asyncio.create_task(rig.call("block", seconds=4))
        reason = await asyncio.wait_for(rig.down.get(), 10)
        assert "no answer to Ping" in reason
        # The loop is blocked in the tool: no ping reaches systemd, which kills the unit.
        await asyncio.to_thread(activator.pings_within, 0.3)  # drain what was in flight
        assert await asyncio.to_thread(activator.pings_within, 1.0) == 0
        outcome = await call
        assert not outcome.ok


async def test_a_host_that_exits_is_down_with_where_to_read_why(
    unit_env: SkillsEnv, tmp_path: Path, activator: Activator
) -> None:
    async with probe_rig(unit_env, tmp_path, launcher=activator.launcher) as rig:
        pid = rig.skill.pid
        assert pid is not None
        await rig.call("crash")
        reason = await asyncio.wait_for(rig.down.get(), 10)
        assert (
            reason == "the skill host exited (its status is in journalctl -u 'huxleyd-skillhost@*')"
        )
        assert _ended(pid)


def _ended(pid: int) -> bool:
    """Gone, or a zombie its activator has not reaped yet (it has exited all the same)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_the_skills_are_listed_through_the_socket(activator: Activator) -> None:
    listed = inventory(activator.launcher)
    assert list(listed) == ["probe"]
    assert listed["probe"]["huxley-skill-probe"] == {
        "type": "object",
        "properties": {"greeting": {"type": "string"}},
        "additionalProperties": False,
    }


async def test_a_socket_that_answers_no_host_is_named(tmp_path: Path) -> None:
    path = tmp_path / "link"

    def a_python_that_failed(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"Traceback (most recent call last):\n")
        writer.close()

    server = await asyncio.start_unix_server(a_python_that_failed, path=str(path))
    async with server:
        with pytest.raises(SkillHostError, match=r"answered b'Traceback.*expected 'pid N'"):
            await ActivatedLauncher(path).start()
    with pytest.raises(SkillHostError, match="cannot reach the skill host socket"):
        await ActivatedLauncher(path).start()


def test_the_mode_line_is_read_up_to_its_newline_only() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(b"host\n\x00\x00\x00\x10frame")
        assert read_mode(theirs.fileno()) == "host"
        assert theirs.recv(64) == b"\x00\x00\x00\x10frame"  # the link's bytes are untouched
        ours.sendall(b"bash -i\n")
        with pytest.raises(ValueError, match="'bash -i'"):
            read_mode(theirs.fileno())


def test_the_launcher_is_chosen_by_who_we_are_and_what_listens(
    unit_env: SkillsEnv, tmp_path: Path
) -> None:
    listening = tmp_path / "link"
    env = {SOCKET_VARIABLE: str(listening)}
    assert isinstance(launcher_for(unit_env, euid=1000, environ=env), Launcher)
    listening.touch()
    chosen = launcher_for(unit_env, euid=1000, environ=env)
    assert chosen == ActivatedLauncher(listening, user=SKILL_USER)
    assert not chosen.makes_data_dirs
    if os.geteuid() == 0:  # root switches users itself (setpriv), socket or not
        assert launcher_for(unit_env, euid=0, environ=env).uid == pwd.getpwnam(SKILL_USER).pw_uid


@pytest.mark.parametrize("line", [b"pid abc\n", b"pod 12\n", b"pid 1 2\n", b"\n"])
def test_only_a_pid_line_is_a_hello(line: bytes, tmp_path: Path) -> None:
    assert parse_hello(b"pid 4242\n", tmp_path) == 4242
    with pytest.raises(SkillHostError, match="expected 'pid N'"):
        parse_hello(line, tmp_path)


async def test_an_activated_process_is_seen_to_end_through_its_pidfd() -> None:
    child = await asyncio.create_subprocess_exec("sleep", "0.3")
    ours, theirs = socket.socketpair()
    _, writer = await asyncio.open_unix_connection(sock=ours)
    process = ActivatedProcess(child.pid, writer)
    running = process.returncode
    assert running is None
    waiting = asyncio.create_task(process.wait())
    await asyncio.sleep(0)
    assert not waiting.done()
    await child.wait()
    assert await asyncio.wait_for(waiting, 5) == UNKNOWN_STATUS
    assert process.returncode == UNKNOWN_STATUS
    writer.close()
    theirs.close()


async def test_ending_a_host_it_cannot_signal_closes_its_link() -> None:
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()  # reaped: its pid is no process to signal
    ours, theirs = socket.socketpair()
    _, writer = await asyncio.open_unix_connection(sock=ours)
    process = ActivatedProcess(gone.pid, writer)
    assert process.returncode == UNKNOWN_STATUS
    process.kill()
    theirs.settimeout(5)
    assert theirs.recv(16) == b""  # the host's read ends: it exits
    writer.close()
    theirs.close()


async def test_a_listing_that_never_comes_ends_at_its_deadline(tmp_path: Path) -> None:
    path = tmp_path / "link"
    held: list[asyncio.StreamWriter] = []
    answer = {"now": b""}  # b"": say nothing, hold the connection

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert await reader.readline() == b"inventory\n"
        writer.write(answer["now"])
        if not answer["now"] or answer.get("hold"):
            held.append(writer)
            return
        writer.close()

    server = await asyncio.start_unix_server(serve, path=str(path))
    async with server:
        launcher = ActivatedLauncher(path)
        with pytest.raises(SkillHostError, match="cannot list the skills through"):
            await asyncio.to_thread(launcher.inventory, 0.3)
        answer["now"] = b"pid 7\n"
        with pytest.raises(SkillHostError, match="listed nothing"):
            await asyncio.to_thread(launcher.inventory, 5)
        answer["now"] = b"pid 7\n{"  # a hello, then a listing that stops halfway
        answer["hold"] = b"yes"
        with pytest.raises(SkillHostError, match="cannot list the skills through"):
            await asyncio.wait_for(asyncio.to_thread(launcher.inventory, 0.3), 5)
        for writer in held:  # before the server closes: from 3.12 it waits for them
            writer.close()


def test_the_socket_is_the_units_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SOCKET_VARIABLE, raising=False)
    assert activation_socket() == SOCKET == Path("/run/huxleyd-skills/link")
    monkeypatch.setenv(SOCKET_VARIABLE, "/tmp/elsewhere")
    assert activation_socket() == Path("/tmp/elsewhere")


async def test_a_socket_that_accepts_and_never_answers_costs_its_deadline(tmp_path: Path) -> None:
    path = tmp_path / "link"
    held: list[asyncio.StreamWriter] = []

    def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_unix_server(hold, path=str(path))
    async with server:
        launcher = ActivatedLauncher(path, hello_deadline_s=0.2)
        with pytest.raises(SkillHostError, match=r"no skill host answered .* within 0\.2 s"):
            await asyncio.wait_for(launcher.start(), 5)
        for writer in held:  # before the server closes: from 3.12 it waits for them
            writer.close()


async def test_a_forgotten_process_gives_its_pidfd_back() -> None:
    child = await asyncio.create_subprocess_exec("sleep", "5")
    ours, theirs = socket.socketpair()
    _, writer = await asyncio.open_unix_connection(sock=ours)
    before = set(os.listdir("/proc/self/fd"))
    process = ActivatedProcess(child.pid, writer)
    opened = set(os.listdir("/proc/self/fd")) - before
    assert len(opened) == 1
    del process
    gc.collect()
    assert not opened & set(os.listdir("/proc/self/fd"))
    child.kill()
    await child.wait()
    writer.close()
    theirs.close()
