"""Cases 1, 6 and 14: the provider connection against the fault-injecting peer.

Real websockets on loopback; the waits between tries are recorded by an
instant sleep (time is an input), so a test reads the schedule the device
would have followed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from huxleyd.providers.apikey import read_api_key
from huxleyd.providers.base import ConnectionState
from huxleyd.providers.transport import ProviderConnection
from tests.fakes.clock import InstantSleep
from tests.fakes.provider_callbacks import Recorder
from tests.fakes.provider_peer import Fault, FaultPeer

TOOLS = [{"name": "get_current_time", "description": "The time.", "parameters": {}}]


def connect(
    peer: FaultPeer, rec: Recorder, sleep: InstantSleep, **kwargs: Any
) -> ProviderConnection:
    conn = rec.connection(peer.url, sleep=sleep, **kwargs)
    conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
    return conn


async def test_five_drops_of_ready_sessions_each_wait_the_first_delay_and_never_go_offline() -> (
    None
):
    rec, sleep = Recorder(), InstantSleep()
    async with FaultPeer([Fault(drop_after_ready=True)]) as peer:
        conn = connect(peer, rec, sleep)
        sleep.after(5, conn.close)
        await asyncio.wait_for(conn.run(), 30)
        assert peer.sessions_ready >= 5
    assert sleep.delays == [1.0] * 5  # was 1, 3, 10, 30, 60: then "offline"
    assert ConnectionState.OFFLINE not in rec.state_names()


async def test_a_try_that_fails_before_the_session_is_ready_still_climbs_the_backoff() -> None:
    rec, sleep = Recorder(), InstantSleep()
    async with FaultPeer([Fault(status=503)]) as peer:
        conn = connect(peer, rec, sleep)
        sleep.after(4, conn.close)
        await asyncio.wait_for(conn.run(), 30)
    assert sleep.delays == [1.0, 3.0, 10.0, 30.0]
    assert rec.states[-2].state is ConnectionState.OFFLINE


async def test_a_refused_key_is_a_state_retried_slowly_with_the_key_file_re_read(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "openai.key"
    key_file.write_text("sk-revoked\n")
    key_file.chmod(0o600)
    rec = Recorder()
    conn: ProviderConnection | None = None

    async def fix_the_key(delays: list[float]) -> None:
        key_file.write_text("sk-fixed\n")  # the admin fixes the key meanwhile

    sleep = InstantSleep(fix_the_key)
    async with FaultPeer([Fault(status=401), Fault()]) as peer:
        conn = connect(peer, rec, sleep, key_source=lambda: read_api_key(key_file))
        task = asyncio.create_task(conn.run())
        await rec.wait_until(lambda: ConnectionState.CONNECTED in rec.state_names())
        await conn.close()
        await asyncio.wait_for(task, 10)  # run() did not raise: the daemon stays up
        assert [(h.status, h.authorization) for h in peer.handshakes] == [
            (401, "Bearer sk-revoked"),
            (101, "Bearer sk-fixed"),
        ]
    assert sleep.delays == [2.0]  # the changed key is tried at the first look, not in 300 s
    refused = next(s for s in rec.states if s.state is ConnectionState.KEY_REFUSED)
    assert "401" in refused.detail and refused.retry_in_s == 300.0


async def test_close_gives_up_on_a_peer_that_never_answers_the_close() -> None:
    rec = Recorder()
    async with FaultPeer([Fault(ignore_close=True)]) as peer:
        conn = connect(peer, rec, InstantSleep())
        task = asyncio.create_task(conn.run())
        await rec.wait_until(lambda: ConnectionState.CONNECTED in rec.state_names())
        started = time.monotonic()
        await conn.close()  # as the runtime does at shutdown
        await asyncio.wait_for(task, 30)
        took_s = time.monotonic() - started
    # websockets' default waits 10 s for the close frame; we give up after 1.5 s.
    # The bound is a generous safety net on a loaded machine, well under 10 s.
    assert took_s < 6.0, took_s


async def test_a_refused_key_is_heard_once_not_at_every_slow_retry() -> None:
    from tests.fakes.turn_rig import Rig

    async with Rig() as rig:
        for _ in range(3):  # three slow retries, each refused again
            rig.coordinator.on_connection(ConnectionState.KEY_REFUSED)
        assert rig.audio.earcon_names() == ["key_refused"]  # the persona has this cue
        assert rig.coordinator.key_refused
        rig.coordinator.on_connection(ConnectionState.CONNECTED)  # the admin fixed the key
        assert not rig.coordinator.key_refused


async def test_a_key_refused_for_good_plays_the_key_cue_and_other_fatal_ends_the_error_cue() -> (
    None
):
    # The provider says why the session ended; the turn layer picks the cue.
    from huxleyd.providers.base import EndReason
    from tests.fakes.turn_rig import Rig

    async with Rig() as rig:
        rig.coordinator.on_connection(ConnectionState.FAILED, ended=EndReason.KEY_REFUSED)
        rig.coordinator.on_connection(ConnectionState.FAILED, ended=EndReason.MODEL_REFUSED)
        rig.coordinator.on_connection(ConnectionState.FAILED)  # a core that could not tell
        assert rig.audio.earcon_names() == ["key_refused", "error", "error"]
