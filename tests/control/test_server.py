"""ControlServer on a real unix socket in a temp dir, with the recording fake handler."""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import socket
import stat
from pathlib import Path

import pytest

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.errors import CommandFailedError, ControlError, ControlSocketInUseError
from huxleyd.control.handler import ControlHandler
from huxleyd.control.protocol import MAX_LINE_BYTES, PttAction
from huxleyd.control.server import ControlServer
from tests.fakes.control_client import LineClient
from tests.fakes.control_handler import FakeControlHandler


def settings(path: Path, **kw: object) -> ControlSettings:
    return ControlSettings(socket_path=path, socket_group=None, **kw)  # type: ignore[arg-type]


async def wait_for(predicate: object, what: str) -> None:
    """Poll ``predicate()`` until true (a bound, not a speed assertion)."""
    for _ in range(500):
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def test_fake_satisfies_the_protocol() -> None:
    handler: ControlHandler = FakeControlHandler()
    assert isinstance(handler, ControlHandler)


async def test_every_command_round_trips(sock_path: Path) -> None:
    fake = FakeControlHandler()
    async with ControlServer(fake, settings(sock_path)):
        client = await LineClient.connect(sock_path)
        status = await client.call(1, "status")
        assert status["id"] == 1 and status["ok"] is True
        assert status["result"]["volume"] == 55
        assert status["result"]["xruns"] == {
            "underruns": 2,
            "overruns": 1,
            "late_periods": 4,
            "dropped_mic_frames": 0,
            "card_underruns": 2,
            "speaker_dropouts": 0,
            "source_gaps": 0,
            "silences": {},
        }
        assert status["result"]["is_simulator"] is True
        assert await client.call(2, "volume") == {"id": 2, "ok": True, "result": {"volume": 55}}
        assert await client.call(3, "volume", level=30) == {
            "id": 3,
            "ok": True,
            "result": {"volume": 30},
        }
        assert (await client.call(4, "volume"))["result"] == {"volume": 30}
        assert (await client.call(5, "say", text="what time is it"))["result"] == {
            "turn_id": "turn-1"
        }
        assert (await client.call(6, "stop"))["result"] == {"stopped": True}
        assert (await client.call(7, "stop"))["result"] == {"stopped": False}
        skills = (await client.call(8, "skills"))["result"]["skills"]
        assert skills[0] == {
            "name": "system",
            "tools": ["get_current_time", "set_volume"],
            "distribution": "huxleyd",
            "version": "0.1.0",
            "state": "ready",
            "reason": "",
        }
        for i, action in enumerate(("press", "release", "tap")):
            reply = await client.call(10 + i, "ptt", action=action)
            assert reply == {"id": 10 + i, "ok": True, "result": {"action": action}}
        checks = (await client.call(20, "doctor"))["result"]["checks"]
        assert [c["ok"] for c in checks] == [True, False]
        assert checks[1]["fix"] == "check the network"
        await client.close()
    assert fake.called("set_volume") == [30]
    assert fake.called("say") == ["what time is it"]
    assert fake.called("ptt") == [PttAction.PRESS, PttAction.RELEASE, PttAction.TAP]
    assert len(fake.called("stop")) == 2
    assert len(fake.called("doctor")) == 1


async def test_levels_streams_samples_then_done(sock_path: Path) -> None:
    fake = FakeControlHandler()
    async with ControlServer(fake, settings(sock_path)):
        client = await LineClient.connect(sock_path)
        await client.send({"id": 9, "cmd": "levels", "args": {"count": 4}})
        lines = [await client.recv() for _ in range(5)]
        assert [line["id"] for line in lines] == [9] * 5
        assert [line["result"] for line in lines[:4]] == [
            {"mic_dbfs": -20.0, "output_dbfs": -6.0, "silences": 0},
            {"mic_dbfs": -120.0, "output_dbfs": -12.5, "silences": 0},  # -inf: the floor
            {"mic_dbfs": -3.0, "output_dbfs": -40.0, "silences": 2},
            {"mic_dbfs": -20.0, "output_dbfs": -6.0, "silences": 0},
        ]
        assert lines[4] == {"id": 9, "ok": True, "done": True}
        # The connection is still usable after a stream.
        assert (await client.call(10, "volume"))["result"] == {"volume": 55}
        await client.close()
    assert fake.levels_closed == 1


async def test_levels_stops_when_the_client_leaves(sock_path: Path) -> None:
    fake = FakeControlHandler(sample_interval_s=0.005)
    async with ControlServer(fake, settings(sock_path)) as server:
        client = await LineClient.connect(sock_path)
        await client.send({"id": 1, "cmd": "levels"})
        assert "result" in await client.recv()
        assert "result" in await client.recv()
        await client.close()
        await wait_for(lambda: fake.levels_closed == 1, "levels iterator closed")
        await wait_for(lambda: server.client_count == 0, "client task finished")
        other = await LineClient.connect(sock_path)
        assert (await other.call(2, "volume"))["ok"] is True
        await other.close()


async def test_bad_lines_get_errors_and_the_connection_stays_usable(sock_path: Path) -> None:
    async with ControlServer(FakeControlHandler(), settings(sock_path)):
        client = await LineClient.connect(sock_path)
        await client.send_raw(b"this is not json\n")
        reply = await client.recv()
        assert reply["ok"] is False and reply["id"] is None
        assert reply["error"].startswith("request is not JSON")
        await client.send({"id": 2, "cmd": "reboot"})
        reply = await client.recv()
        assert reply["id"] == 2 and reply["error"].startswith('unknown cmd "reboot"')
        reply = await client.call(3, "volume", level=130)
        assert reply == {
            "id": 3,
            "ok": False,
            "error": "bad args for volume: 'level' expected an integer 0-100, got 130",
        }
        await client.send_raw(b"\xff\xfe\n")
        assert "not UTF-8" in (await client.recv())["error"]
        await client.send_raw(b"x" * (MAX_LINE_BYTES * 3) + b"\n")
        reply = await client.recv()
        assert reply == {
            "id": None,
            "ok": False,
            "error": f"request longer than {MAX_LINE_BYTES} bytes",
        }
        assert await client.call(4, "volume") == {"id": 4, "ok": True, "result": {"volume": 55}}
        await client.close()


async def test_handler_failures_become_error_replies(sock_path: Path) -> None:
    fake = FakeControlHandler(
        fail={
            "say": CommandFailedError("offline: the provider is reconnecting (try 4)"),
            "stop": RuntimeError("boom sk-THIS-IS-A-SECRET"),
        },
        hang={"doctor"},
    )
    async with ControlServer(fake, settings(sock_path, request_timeout_s=0.2)):
        client = await LineClient.connect(sock_path)
        assert (await client.call(1, "say", text="hi"))["error"] == (
            "offline: the provider is reconnecting (try 4)"
        )
        reply = await client.call(2, "stop")
        assert reply["error"] == "internal error in stop (see journalctl -u huxleyd)"
        assert "sk-" not in str(reply)
        assert (await client.call(3, "doctor"))["error"] == "doctor timed out after 0.2 s"
        assert (await client.call(4, "volume"))["ok"] is True
        await client.close()


async def test_levels_failure_is_an_error_line(sock_path: Path) -> None:
    fake = FakeControlHandler(fail={"levels": CommandFailedError("audio engine not running")})
    async with ControlServer(fake, settings(sock_path)):
        client = await LineClient.connect(sock_path)
        reply = await client.call(1, "levels", count=2)
        assert reply == {"id": 1, "ok": False, "error": "audio engine not running"}
        await client.close()


async def test_clients_are_served_concurrently(sock_path: Path) -> None:
    fake = FakeControlHandler(hang={"status"})
    many = settings(sock_path, request_timeout_s=30, max_clients_per_uid=16)
    async with ControlServer(fake, many):
        stuck = await LineClient.connect(sock_path)
        await stuck.send({"id": 1, "cmd": "status"})
        await wait_for(lambda: fake.called("status"), "status call started")

        async def session(n: int) -> list[int]:
            client = await LineClient.connect(sock_path)
            got = []
            for k in range(5):
                reply = await client.call(n * 100 + k, "say", text=f"client {n} line {k}")
                assert reply["ok"] is True
                got.append(reply["id"])
            await client.close()
            return got

        results = await asyncio.gather(*(session(n) for n in range(8)))
        # While one client waits on a hung command, eight others were answered, in order.
        assert results == [[n * 100 + k for k in range(5)] for n in range(8)]
        assert len(fake.called("say")) == 40
        await stuck.close()


async def test_at_the_limit_the_longest_idle_client_makes_room(sock_path: Path) -> None:
    async with ControlServer(FakeControlHandler(), settings(sock_path, max_clients=2)) as server:
        a = await LineClient.connect(sock_path)
        b = await LineClient.connect(sock_path)
        await wait_for(lambda: server.client_count == 2, "two clients served")
        assert (await b.call(1, "volume"))["ok"] is True  # a is now the longest idle
        c = await LineClient.connect(sock_path)
        assert (await c.call(2, "volume"))["ok"] is True  # served, not refused
        assert await a.reader.read() == b""  # a was closed to make room
        assert server.evictions == 1
        assert (await b.call(3, "volume"))["ok"] is True
        for client in (a, b, c):
            await client.close()


async def test_socket_file_mode_and_cleanup(sock_path: Path) -> None:
    assert not sock_path.parent.exists()
    server = ControlServer(FakeControlHandler(), settings(sock_path))
    await server.start()
    st = os.stat(sock_path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o660
    assert sorted(p.name for p in sock_path.parent.iterdir()) == ["control.sock"]
    client = await LineClient.connect(sock_path)
    assert (await client.call(1, "volume"))["ok"] is True
    await server.close()
    assert not os.path.exists(sock_path)  # noqa: ASYNC240
    assert await client.reader.read() == b""  # the server hung up on close
    await client.close()
    await server.close()  # idempotent
    with pytest.raises(ControlError, match="single-use"):
        await server.start()


async def test_stale_socket_is_replaced(sock_path: Path) -> None:
    sock_path.parent.mkdir(parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))
    dead.listen()
    dead.close()  # the file stays, nobody listens: what a crashed daemon leaves
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    async with ControlServer(FakeControlHandler(), settings(sock_path)):
        client = await LineClient.connect(sock_path)
        assert (await client.call(1, "volume"))["ok"] is True
        await client.close()


async def test_refuses_to_start_when_another_daemon_listens(sock_path: Path) -> None:
    first_handler = FakeControlHandler(volume=11)
    async with ControlServer(first_handler, settings(sock_path)):
        second = ControlServer(FakeControlHandler(volume=99), settings(sock_path))
        with pytest.raises(ControlSocketInUseError, match="another huxleyd is listening on"):
            await second.start()
        await second.close()
        # The first daemon's socket survived the attempt.
        client = await LineClient.connect(sock_path)
        assert (await client.call(1, "volume"))["result"] == {"volume": 11}
        await client.close()


async def test_refuses_a_path_that_is_not_a_socket(sock_path: Path) -> None:
    os.makedirs(sock_path.parent)
    with open(sock_path, "w") as fh:  # noqa: ASYNC230 - test setup on a local disk
        fh.write("precious")
    with pytest.raises(ControlSocketInUseError, match="exists and is not a socket"):
        await ControlServer(FakeControlHandler(), settings(sock_path)).start()
    with open(sock_path) as fh:  # noqa: ASYNC230
        assert fh.read() == "precious"


async def test_refuses_a_path_too_long_for_a_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / ("d" * 120) / "control.sock"
    with pytest.raises(ControlError, match="too long for a unix socket"):
        await ControlServer(FakeControlHandler(), settings(path)).start()


async def test_missing_group_is_not_fatal(
    sock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = ControlSettings(socket_path=sock_path, socket_group="no-such-group-hx")
    with caplog.at_level(logging.WARNING, logger="huxleyd.control"):
        async with ControlServer(FakeControlHandler(), cfg):
            assert os.stat(sock_path).st_gid == os.getegid()
    assert any("control_group_missing" in r.getMessage() for r in caplog.records)


def _another_group() -> grp.struct_group | None:
    mine = os.getegid()
    if os.geteuid() == 0:
        candidates = [g for g in grp.getgrall() if g.gr_gid != mine]
    else:
        candidates = [grp.getgrgid(g) for g in os.getgroups() if g != mine]
    return candidates[0] if candidates else None


async def test_socket_gets_the_configured_group(sock_path: Path) -> None:
    group = _another_group()
    if group is None:
        pytest.skip("no second group this user may chgrp to")
    cfg = ControlSettings(socket_path=sock_path, socket_group=group.gr_name)
    async with ControlServer(FakeControlHandler(), cfg):
        st = os.stat(sock_path)
        assert st.st_gid == group.gr_gid
        assert stat.S_IMODE(st.st_mode) == 0o660


async def test_a_refused_chgrp_to_our_own_group_is_not_blamed_on_membership(
    sock_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the unit's seccomp filter did on the image: EPERM for a group the daemon is in.
    def refuse(*_args: object, **_kw: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chown", refuse)
    own = grp.getgrgid(os.getegid()).gr_name
    with caplog.at_level(logging.WARNING, logger="huxleyd.control"):
        async with ControlServer(
            FakeControlHandler(), ControlSettings(socket_path=sock_path, socket_group=own)
        ):
            pass
    [line] = [r.getMessage() for r in caplog.records if "control_chgrp_failed" in r.getMessage()]
    assert "not a member" not in line and "SystemCallFilter" in line, line


async def test_request_bodies_are_not_logged(
    sock_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="huxleyd.control"):
        async with ControlServer(FakeControlHandler(), settings(sock_path)):
            client = await LineClient.connect(sock_path)
            await client.call(1, "say", text="my bank pin is 4711")
            await client.close()
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "control_request" in messages  # the request was logged (at DEBUG, cmd only)
    assert "4711" not in messages
    assert all("say" not in r.getMessage() or r.levelno <= logging.DEBUG for r in caplog.records)


# -- client bookkeeping: the per-uid cap is exact, busy clients are never cut off


async def hung_up(client: LineClient) -> bool:
    """True once the server closed ``client`` (bounded: a mutant must fail, not hang)."""
    return await asyncio.wait_for(client.reader.read(), 10) == b""


async def test_the_per_uid_cap_is_exact(sock_path: Path) -> None:
    cap = settings(sock_path, max_clients_per_uid=2, max_clients=16)
    async with ControlServer(FakeControlHandler(), cap) as server:
        a = await LineClient.connect(sock_path)
        assert (await a.call(1, "volume"))["ok"] is True
        b = await LineClient.connect(sock_path)
        assert (await b.call(2, "volume"))["ok"] is True
        c = await LineClient.connect(sock_path)  # the third of one uid: a makes room
        assert (await c.call(3, "volume"))["ok"] is True
        assert await hung_up(a)
        assert server.evictions == 1
        await wait_for(lambda: server.client_count == 2, "two clients left")
        d = await LineClient.connect(sock_path)  # and b, the longest idle now
        assert (await d.call(4, "volume"))["ok"] is True
        assert await hung_up(b)
        assert server.evictions == 2
        for client in (a, b, c, d):
            await client.close()


async def test_a_client_in_the_middle_of_a_request_is_never_cut_off(sock_path: Path) -> None:
    fake = FakeControlHandler(hang={"doctor"})
    cap = settings(sock_path, max_clients_per_uid=2, request_timeout_s=30)
    async with ControlServer(fake, cap) as server:
        busy = await LineClient.connect(sock_path)  # the longest idle, but busy
        await busy.send({"id": 1, "cmd": "doctor"})
        await wait_for(lambda: fake.called("doctor"), "doctor started")
        idle = await LineClient.connect(sock_path)
        assert (await idle.call(2, "volume"))["ok"] is True
        newcomer = await LineClient.connect(sock_path)
        assert (await newcomer.call(3, "volume"))["ok"] is True
        assert await hung_up(idle)  # the idle one made room
        assert server.evictions == 1
        # Now both held connections are busy: the next is refused, nobody is cut.
        await newcomer.send({"id": 4, "cmd": "doctor"})
        await wait_for(lambda: len(fake.called("doctor")) == 2, "second doctor started")
        refused = await LineClient.connect(sock_path)
        reply = await asyncio.wait_for(refused.recv(), 10)
        assert reply["ok"] is False and "too many huxleyctl clients" in reply["error"]
        assert server.evictions == 1
        for client in (busy, idle, newcomer, refused):
            await client.close()


async def test_watch_clients_that_left_are_gone_at_once(sock_path: Path) -> None:
    # Eight `huxleyctl watch` that exited must neither count nor lock their user out.
    errors: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    fake = FakeControlHandler()
    cap = settings(sock_path, max_clients_per_uid=8, request_timeout_s=30)
    async with ControlServer(fake, cap) as server:
        watchers = [await LineClient.connect(sock_path) for _ in range(8)]
        for n, watcher in enumerate(watchers):
            await watcher.send({"id": n, "cmd": "watch"})
            assert (await watcher.recv())["result"]["kind"] == "watching"
        for watcher in watchers:
            await watcher.close()
        await wait_for(lambda: server.client_count == 0, "the watchers' connections ended")
        assert fake.watch_closed == 8
        late = await LineClient.connect(sock_path)
        assert (await late.call(9, "volume"))["ok"] is True
        assert server.evictions == 0
        await late.close()
    assert errors == []  # each left cleanly, not through an exception


async def test_a_line_sent_during_a_watch_ends_it_and_is_answered(sock_path: Path) -> None:
    fake = FakeControlHandler()
    async with ControlServer(fake, settings(sock_path)):
        client = await LineClient.connect(sock_path)
        await client.send({"id": 1, "cmd": "watch"})
        assert (await client.recv())["result"]["kind"] == "watching"
        await client.send({"id": 2, "cmd": "volume"})
        assert await client.recv() == {"id": 1, "ok": True, "done": True}
        assert await client.recv() == {"id": 2, "ok": True, "result": {"volume": 55}}
        await wait_for(lambda: fake.watch_closed == 1, "the watch subscription closed")
        await client.close()


# -- any input: an error reply, the connection and the handler untouched


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b'{"id": 1, "cmd": "say", "args": {"text": "hi \\ud800"}}\n', "lone UTF-16 surrogate"),
        (
            b'{"id": 1, "cmd": "say", "args": {"text": ' + b"[" * 5000 + b"]" * 5000 + b"}}\n",
            "too deeply",
        ),
        (b"\xff\xfe\x00garbage\n", "not UTF-8"),
        (b'{"id": 1, "cmd": "say", "args": {"text": 1e999999}}\n', "bad args"),
    ],
)
async def test_hostile_lines_get_an_error_and_nothing_else_changes(
    sock_path: Path, line: bytes, fragment: str
) -> None:
    fake = FakeControlHandler()
    async with ControlServer(fake, settings(sock_path)) as server:
        client = await LineClient.connect(sock_path)
        await client.send_raw(line)
        reply = await client.recv()
        assert reply["ok"] is False and fragment in reply["error"]
        assert fake.called("say") == []
        assert (await client.call(2, "say", text="hello"))["ok"] is True
        assert server.client_count == 1
        await client.close()


async def test_stopping_with_clients_connected_leaves_no_traceback(sock_path: Path) -> None:
    # asyncio's stream callback logs a traceback for a client task that ends
    # cancelled: a stop with a watch, a request in flight and an idle client.
    errors: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    fake = FakeControlHandler(hang={"say"})
    server = ControlServer(fake, settings(sock_path, request_timeout_s=30))
    await server.start()
    watcher = await LineClient.connect(sock_path)
    await watcher.send({"id": 1, "cmd": "watch"})
    assert (await watcher.recv())["result"]["kind"] == "watching"
    asking = await LineClient.connect(sock_path)
    await asking.send({"id": 2, "cmd": "say", "args": {"text": "hello"}})
    await wait_for(lambda: fake.called("say"), "say in flight")
    idle = await LineClient.connect(sock_path)
    await wait_for(lambda: server.client_count == 3, "three clients")
    await server.close()
    for _ in range(3):
        await asyncio.sleep(0)  # let the stream callbacks run
    assert errors == []
    for client in (watcher, asking, idle):
        assert await hung_up(client)
        await client.close()


async def test_a_levels_stream_that_stalls_ends_with_a_timeout_error(sock_path: Path) -> None:
    # levels must deliver each sample within the request timeout (watch may be quiet).
    fake = FakeControlHandler(hang={"levels"})
    async with ControlServer(fake, settings(sock_path, request_timeout_s=0.2)):
        client = await LineClient.connect(sock_path)
        await client.send({"id": 5, "cmd": "levels"})
        assert await client.recv() == {
            "id": 5,
            "ok": False,
            "error": "levels timed out after 0.2 s",
        }
        assert (await client.call(6, "volume"))["ok"] is True  # the connection goes on
        await client.close()
