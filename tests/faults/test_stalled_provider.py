"""A stalled provider is not "connected": a reply trickled one byte per 100 ms.

The peer is real (websockets on loopback) and really crawls after a good
handshake; the stall clock is the connection's injected clock, so the test
moves time itself instead of waiting it out.
"""

from __future__ import annotations

import asyncio

from huxleyd.providers.base import ConnectionState
from huxleyd.turns.state import TurnOutcome, TurnState
from tests.fakes.clock import FakeSleeper
from tests.fakes.provider_callbacks import Recorder
from tests.fakes.provider_peer import Fault, FaultPeer
from tests.fakes.turn_rig import Rig

TOOLS = [{"name": "get_current_time", "description": "The time.", "parameters": {}}]
STALL_S = 4.0


async def test_a_reply_trickled_byte_by_byte_is_a_stall_reconnected_and_named() -> None:
    rec, sleeper = Recorder(), FakeSleeper()
    async with FaultPeer([Fault(trickle_s=0.1), Fault()]) as peer:
        conn = rec.connection(
            peer.url,
            sleep=sleeper.sleep,
            stall_sleep=sleeper.sleep,
            clock=sleeper.clock,
            stall_timeout_s=STALL_S,
        )
        conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
        task = asyncio.create_task(conn.run())
        await peer.wait_until(lambda: peer.sessions_ready == 1)
        await rec.wait_until(lambda: ConnectionState.CONNECTED in rec.state_names())
        conn.request_response()
        await peer.wait_until(lambda: peer.trickled_bytes >= 2)  # the crawl has begun
        await sleeper.advance(STALL_S / 2)
        assert conn.status.state is ConnectionState.CONNECTED  # not yet: half the time
        await sleeper.advance(STALL_S / 2)  # exactly the stall time: the backoff still waits
        await rec.wait_until(lambda: ConnectionState.RECONNECTING in rec.state_names())
        assert conn.stalls == 1
        stalled = next(s for s in rec.states if s.state is ConnectionState.STALLED)
        assert "no complete frame" in stalled.detail and "stall_timeout_s" in stalled.detail
        retry = rec.states[-1]  # what `status` shows while it waits to reconnect
        assert retry.state is ConnectionState.RECONNECTING and retry.detail.startswith("stalled")
        await sleeper.advance(1.0)  # the first backoff delay: a fresh session
        await peer.wait_until(lambda: peer.sessions_ready == 2)
        await rec.wait_until(lambda: rec.state_names().count(ConnectionState.CONNECTED) == 2)
        await conn.close()
        await asyncio.wait_for(task, 10)


async def test_a_healthy_pause_without_a_due_reply_is_no_stall() -> None:
    rec, sleeper = Recorder(), FakeSleeper()
    async with FaultPeer([Fault()]) as peer:
        conn = rec.connection(
            peer.url,
            sleep=sleeper.sleep,
            stall_sleep=sleeper.sleep,
            clock=sleeper.clock,
            stall_timeout_s=STALL_S,
        )
        conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
        task = asyncio.create_task(conn.run())
        await peer.wait_until(lambda: peer.sessions_ready == 1)
        await rec.wait_until(lambda: ConnectionState.CONNECTED in rec.state_names())
        await sleeper.advance(STALL_S * 10)  # idle: nothing is due, nothing to wait for
        assert conn.stalls == 0 and conn.status.state is ConnectionState.CONNECTED
        await conn.close()
        await asyncio.wait_for(task, 10)


async def test_a_stall_mid_reply_fails_the_turn_at_once_with_the_offline_cue() -> None:
    async with Rig() as rig:
        await rig.turn()
        assert rig.coordinator.state.replying
        rig.coordinator.on_connection(ConnectionState.STALLED)
        assert rig.state() is TurnState.IDLE
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.FAILED
        assert rig.audio.earcon_names()[-1] == "offline"
