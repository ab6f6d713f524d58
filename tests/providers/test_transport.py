"""The websocket transport against the simulator on loopback (real sockets)."""

from __future__ import annotations

import asyncio
import logging
import math
import socket
from pathlib import Path
from typing import Any

import pytest

from huxleyd.clock import ManualClock
from huxleyd.errors import ConfigError
from huxleyd.providers.apikey import read_api_key
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.providers.connection_parts import Endpoint, SocketLimits
from huxleyd.providers.events import (
    AudioChunk,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStatus,
    SessionReady,
    ToolCall,
)
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.settings import ProviderSettings
from huxleyd.providers.transport import ProviderConnection
from huxleyd.sim.scenario import load_scenario, scenario_from_dict
from huxleyd.sim.server import SimServer
from tests.fakes.clock import InstantSleep
from tests.fakes.provider_callbacks import Recorder
from tests.fakes.provider_peer import Fault, FaultPeer

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"
TOOLS = [{"name": "get_current_time", "description": "The time.", "parameters": {}}]
TURN_PCM = bytes(24_000 * 2 * 3 // 10)  # 300 ms of silence


def talk(conn: ProviderConnection) -> None:
    """One push-to-talk turn, then ask for the answer."""
    conn.start_turn()
    for offset in range(0, len(TURN_PCM), 960):
        conn.append_audio(TURN_PCM[offset : offset + 960])
    conn.end_turn()
    conn.request_response()


def sim(scenario: Any = None, **kwargs: Any) -> SimServer:
    return SimServer(scenario, speed=math.inf, synth="tone", **kwargs)


async def test_a_turn_with_a_tool_call_through_the_sim() -> None:
    rec = Recorder()
    async with sim(load_scenario(SCENARIOS / "time.toml")) as server:
        conn = rec.connection(server.url, sleep=InstantSleep())
        conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        talk(conn)
        first = await rec.wait_for(ResponseDone)
        assert first.status is ResponseStatus.COMPLETED
        assert first.had_audio
        [call] = first.tool_calls
        assert call.name == "get_current_time"
        assert rec.of(ToolCall) == [call]
        conn.send_tool_output(call.call_id, '{"time": "15:10"}')
        conn.request_response()
        second = await rec.wait_for(ResponseDone, 2)
        assert second.status is ResponseStatus.COMPLETED
        await conn.close()
        await task
        assert server.violations == []
        assert server.record.sim_errors == []
        first_frame = server.record.raw[0]
        assert first_frame["type"] == "session.update"
        assert first_frame["session"]["audio"]["input"]["turn_detection"] is None
        assert first_frame["session"]["tools"][0]["name"] == "get_current_time"
        assert server.record.tool_outputs == {call.call_id: '{"time": "15:10"}'}
        assert server.record.committed_audio == [TURN_PCM]
    assert rec.state_names() == [
        ConnectionState.CONNECTING,
        ConnectionState.CONNECTED,
        ConnectionState.CLOSED,
    ]
    assert all(isinstance(e.pcm, bytes) and e.pcm for e in rec.of(AudioChunk))


async def test_a_drop_mid_reply_fails_the_response_reconnects_and_the_next_turn_works() -> None:
    rec = Recorder()
    sleep = InstantSleep()
    async with sim(load_scenario(SCENARIOS / "dropped_connection.toml")) as server:
        conn = rec.connection(server.url, sleep=sleep)
        conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        talk(conn)
        cut = await rec.wait_for(ResponseDone)
        assert (cut.status, cut.reason) == (ResponseStatus.FAILED, "connection_lost")
        assert cut.had_audio
        await rec.wait_for(SessionReady, 2)  # reconnected, configuration re-sent
        talk(conn)
        back = await rec.wait_for(ResponseDone, 2)
        assert back.status is ResponseStatus.COMPLETED
        await conn.close()
        await task
        assert server.connection_count == 2
        updates = [r for r in server.record.raw if r["type"] == "session.update"]
        assert len(updates) == 2
        assert updates[1]["session"]["instructions"] == "Be brief."
        assert server.violations == []
    assert sleep.delays == [1.0]  # a healthy session dropped: the schedule starts over
    assert rec.state_names() == [
        ConnectionState.CONNECTING,
        ConnectionState.CONNECTED,
        ConnectionState.RECONNECTING,
        ConnectionState.CONNECTED,
        ConnectionState.CLOSED,
    ]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def test_offline_from_the_fourth_failed_try() -> None:
    rec, sleep = Recorder(), InstantSleep()
    conn = rec.connection(f"ws://127.0.0.1:{closed_port()}/v1/realtime", sleep=sleep)
    sleep.after(5, conn.close)
    await conn.run()
    assert sleep.delays == [1.0, 3.0, 10.0, 30.0, 60.0]
    assert [(s.state, s.attempt, s.retry_in_s) for s in rec.states] == [
        (ConnectionState.CONNECTING, 0, None),
        (ConnectionState.RECONNECTING, 1, 1.0),
        (ConnectionState.RECONNECTING, 2, 3.0),
        (ConnectionState.RECONNECTING, 3, 10.0),
        (ConnectionState.OFFLINE, 4, 30.0),
        (ConnectionState.OFFLINE, 5, 60.0),
        (ConnectionState.CLOSED, 0, None),
    ]
    assert "ConnectionRefusedError" in rec.states[1].detail


async def test_a_rejected_key_is_retried_slowly_and_never_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rec = Recorder()
    conn: ProviderConnection | None = None

    async def stop(delays: list[float]) -> None:
        if conn is not None:
            await conn.close()

    sleep = InstantSleep(stop)
    async with sim(api_key="sk-right") as server:
        conn = rec.connection(server.url, api_key="sk-wrong-secret", sleep=sleep)
        with caplog.at_level(logging.DEBUG):
            await conn.run()
        assert [h.status for h in server.handshakes] == [401]
    assert sleep.delays == [300.0]  # not the fast schedule: a key does not fix itself
    assert rec.state_names() == [
        ConnectionState.CONNECTING,
        ConnectionState.KEY_REFUSED,
        ConnectionState.CLOSED,
    ]
    assert "HTTP 401" in rec.states[1].detail
    assert "sk-wrong-secret" not in caplog.text
    assert "provider_key_refused" in caplog.text


async def test_renew_opens_a_fresh_session_and_resends_the_configuration() -> None:
    rec = Recorder()
    sleep = InstantSleep()
    async with sim() as server:
        conn = rec.connection(server.url, sleep=sleep)
        conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        conn.renew()
        await rec.wait_for(SessionReady, 2)
        assert conn.connects == 2
        await conn.close()
        await task
        updates = [r for r in server.record.raw if r["type"] == "session.update"]
        assert [u["session"]["tools"][0]["name"] for u in updates] == ["get_current_time"] * 2
    assert sleep.delays == []  # a renewal does not back off
    renewing = [s for s in rec.states if s.detail == "renew"]
    assert [s.state for s in renewing] == [ConnectionState.CONNECTING]


async def test_commands_while_disconnected_are_dropped_and_the_configuration_kept() -> None:
    rec = Recorder()
    async with sim() as server:
        conn = rec.connection(server.url, sleep=InstantSleep())
        talk(conn)  # no socket yet: nothing may crash, nothing is queued
        assert conn.cancel_response() is False
        conn.send_tool_output("call_gone", "{}")
        # clear, 15 appends, commit, create, cancel, tool output: all dropped
        assert conn.dropped_messages == 1 + 15 + 1 + 1 + 1 + 1
        conn.configure(instructions="Kept for later.", tools=[], voice="cedar")
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        await conn.close()
        await task
        [first, *rest] = server.record.raw
        assert first["type"] == "session.update"
        assert first["session"]["instructions"] == "Kept for later."
        assert rest == []


async def test_an_error_that_ends_the_session_makes_it_reconnect() -> None:
    scenario = scenario_from_dict(
        {"turns": [{"responses": [{"error": {"code": "session_expired", "message": "Too old."}}]}]}
    )
    rec = Recorder()
    async with sim(scenario) as server:
        conn = rec.connection(server.url, sleep=InstantSleep())
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        conn.send_user_text("hello")
        conn.request_response()
        error = await rec.wait_for(ProviderErrorEvent)
        assert (error.code, error.recoverable) == ("session_expired", False)
        await rec.wait_for(SessionReady, 2)
        await conn.close()
        await task
        assert server.connection_count == 2


async def test_a_failing_event_handler_is_logged_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rec = Recorder()

    def fragile(event: Any) -> None:
        rec.on_event(event)
        if isinstance(event, AudioChunk):
            raise RuntimeError("handler bug")

    async with sim() as server:
        conn = ProviderConnection(
            OpenAIRealtimeCore(),
            Endpoint(url=server.url, model="gpt-realtime"),
            on_event=fragile,
        )
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        with caplog.at_level(logging.ERROR, logger="huxleyd.providers"):
            conn.send_user_text("hi")
            conn.request_response()
            done = await rec.wait_for(ResponseDone)
        await conn.close()
        await task
    assert done.status is ResponseStatus.COMPLETED
    assert "provider_event_handler_failed" in caplog.text


async def test_session_age_follows_the_injected_clock() -> None:
    rec = Recorder()
    clock = ManualClock(100.0)
    async with sim() as server:
        conn = rec.connection(server.url, sleep=InstantSleep(), clock=clock)
        assert conn.session_age_s() is None
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        clock.advance(1500.0)
        assert conn.session_age_s() == 1500.0
        await conn.close()
        await task
        assert conn.session_age_s() is None


def test_state_reports_are_plain_values() -> None:
    status = ConnectionStatus(ConnectionState.OFFLINE, 4, 30.0, "refused")
    assert status.state == "offline"  # the coordinator compares with plain strings


def test_the_api_key_file_is_read_and_stripped(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("  sk-abc\n")
    key.chmod(0o600)
    assert read_api_key(key) == "sk-abc"


def test_a_missing_or_empty_key_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing.*provider.key_file.*cannot read"):
        read_api_key(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="empty"):
        read_api_key(empty)


def test_a_key_file_others_can_read_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = tmp_path / "key"
    key.write_text("sk-abc")
    key.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        assert read_api_key(key) == "sk-abc"
    assert "api_key_file_readable_by_others" in caplog.text
    assert "sk-abc" not in caplog.text


# ---------------------------------------------------------------- how a socket is opened and closed


async def test_close_and_renew_send_a_normal_close_with_the_reason() -> None:
    # 1000 (normal closure) tells the provider the session ended on purpose; a
    # 1001/1011 would read as a client going away or failing.
    rec = Recorder()
    async with FaultPeer() as peer:
        conn = rec.connection(peer.url, sleep=InstantSleep())
        conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
        task = asyncio.create_task(conn.run())
        await peer.wait_until(lambda: peer.sessions_ready == 1)
        conn.renew("session renewal")
        await peer.wait_until(lambda: peer.sessions_ready == 2)
        await conn.close()
        await asyncio.wait_for(task, 30)
        await peer.wait_until(lambda: len(peer.closes) == 2)
    assert peer.closes == [(1000, "session renewal"), (1000, "closing")]


def test_the_connect_timeout_defaults_to_the_documented_setting() -> None:
    assert SocketLimits().open_timeout_s == ProviderSettings().connect_timeout_s == 10.0


async def test_a_handshake_that_never_answers_fails_the_try_at_the_connect_timeout() -> None:
    # A peer that takes the TCP connection and hangs must cost one connect
    # timeout, then the backoff: not websockets' own default, not forever.
    rec, sleep = Recorder(), InstantSleep()
    loop = asyncio.get_running_loop()
    async with FaultPeer([Fault(stall_handshake=True)]) as peer:
        conn = rec.connection(peer.url, sleep=sleep, open_timeout_s=2.0)
        sleep.after(1, conn.close)
        started = loop.time()
        # The safety net stays under websockets' 10 s default, so a timeout
        # that is not passed on fails here.
        await asyncio.wait_for(conn.run(), 8.0)
        took_s = loop.time() - started
        assert peer.stalled == 1
    failed = next(s for s in rec.states if s.state is ConnectionState.RECONNECTING)
    assert "TimeoutError" in failed.detail, failed.detail
    assert took_s >= 2.0, "the try was given up before the connect timeout"


async def test_a_cancel_raised_as_the_handshakes_error_still_ends_the_run() -> None:
    """The daemon's stop cancels the connection; a connect whose clean-up
    turns that cancel into a socket error (as an MCP transport's task group
    did, tests/home/test_mcp_tools.py) must not be taken for a failed try and
    retried: the stop would wait for ever."""
    rec = Recorder()
    conn = rec.connection("ws://127.0.0.1:9/v1/realtime", sleep=InstantSleep())
    disguised = 0

    async def handshake() -> Any:
        nonlocal disguised
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            disguised += 1
            if disguised == 1:
                raise ConnectionResetError("the socket closed under the cancel") from None
            raise

    conn._open = handshake  # type: ignore[method-assign]
    task = asyncio.create_task(conn.run())
    await asyncio.sleep(0.05)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5.0)
    try:
        assert task in done, "the connection tried again after its cancel"
        assert task.cancelled() and disguised == 1
        assert rec.states[-1].state is ConnectionState.CLOSED
    finally:
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.1)
