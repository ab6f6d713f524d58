"""A stalled provider is not "connected": a reply trickled one byte per 100 ms.

The peer is real (websockets on loopback) and really crawls after a good
handshake; the stall clock is the connection's injected clock, so the test
moves time itself instead of waiting it out.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.control.render import provider_link_in_words
from huxleyd.providers.base import ConnectionState
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.transport import ProviderConnection
from huxleyd.sim.scenario import Scenario
from huxleyd.turns.state import TurnOutcome, TurnState
from tests.e2e import harness
from tests.e2e.harness import until
from tests.fakes.clock import FakeSleeper, settle
from tests.fakes.provider_callbacks import Recorder
from tests.fakes.provider_peer import Fault, FaultPeer
from tests.fakes.turn_rig import Rig

TOOLS = [{"name": "get_current_time", "description": "The time.", "parameters": {}}]
STALL_S = 4.0


async def connected(
    rec: Recorder, sleeper: FakeSleeper, peer: FaultPeer, **options: Any
) -> tuple[ProviderConnection, asyncio.Task[None]]:
    """A connection to ``peer`` whose clocks are ``sleeper``'s, run until its
    session is ready; ``options`` go to the connection (a core of the test's)."""
    conn = rec.connection(
        peer.url,
        sleep=sleeper.sleep,
        stall_sleep=sleeper.sleep,
        clock=sleeper.clock,
        stall_timeout_s=STALL_S,
        **options,
    )
    conn.configure(instructions="Be brief.", tools=TOOLS, voice="marin")
    task = asyncio.create_task(conn.run())
    await peer.wait_until(lambda: peer.sessions_ready == 1)
    await rec.wait_until(lambda: ConnectionState.CONNECTED in rec.state_names())
    return conn, task


async def test_a_reply_trickled_byte_by_byte_is_a_stall_reconnected_and_named() -> None:
    rec, sleeper = Recorder(), FakeSleeper()
    async with FaultPeer([Fault(trickle_s=0.1), Fault()]) as peer:
        conn, task = await connected(rec, sleeper, peer)
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


class ForgetsOnCancel(OpenAIRealtimeCore):
    """A core that drops an unstarted request on cancel (as a local-cut dialect
    does): between a silent retry's cancel and its new request nothing is due."""

    forgotten = False

    @property
    def response_active(self) -> bool:
        return super().response_active and not self.forgotten

    def cancel_response(self) -> bool:
        self.forgotten = True
        return super().cancel_response()

    def request_response(self, **kwargs: Any) -> None:
        self.forgotten = False
        super().request_response(**kwargs)


async def test_a_retried_request_does_not_restart_the_stall_clock() -> None:
    rec, sleeper = Recorder(), FakeSleeper()
    async with FaultPeer([Fault(trickle_s=0.1), Fault()]) as peer:
        conn, task = await connected(rec, sleeper, peer, core=ForgetsOnCancel())
        conn.request_response()
        await peer.wait_until(lambda: peer.trickled_bytes >= 1)
        await sleeper.advance(STALL_S * 3 / 4)
        conn.cancel_response()  # the reply watchdog's silent retry: cancel, ask again
        conn.request_response()
        await sleeper.advance(STALL_S / 4)  # the stall time since the first request
        await rec.wait_until(lambda: ConnectionState.STALLED in rec.state_names())
        await conn.close()
        await asyncio.wait_for(task, 10)


async def test_a_healthy_pause_without_a_due_reply_is_no_stall() -> None:
    rec, sleeper = Recorder(), FakeSleeper()
    async with FaultPeer([Fault()]) as peer:
        conn, task = await connected(rec, sleeper, peer)
        await sleeper.advance(STALL_S * 10)  # idle: nothing is due, nothing to wait for
        assert conn.stalls == 0 and conn.status.state is ConnectionState.CONNECTED
        await conn.close()
        await asyncio.wait_for(task, 10)


async def test_a_stall_mid_reply_fails_the_turn_at_once_with_one_cue() -> None:
    async with Rig() as rig:
        await rig.turn()
        assert rig.coordinator.state.replying
        rig.coordinator.on_connection(ConnectionState.STALLED)
        await settle()  # nothing arrived: nothing to play out before the cue
        assert rig.state() is TurnState.IDLE
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.FAILED
        assert rig.audio.earcon_names()[-1:] == ["error"]  # the lost turn's one cue
        assert "offline" not in rig.audio.earcon_names()


async def test_the_daemon_fails_the_turn_on_a_stall_and_status_names_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The whole path: the config key, the real runtime and coordinator, a real
    # crawling peer. As with the defaults (6 s, 8 s), the reply watchdog's
    # silent retry (a cancel, then the same request again) comes before the
    # stall time: a retry must not restart the stall clock, or the 18 s of
    # silent retries would run out first and the link would stay "connected".
    lines = "silent_response_timeout_s = 0.5\nstall_timeout_s = 0.8"
    rig = harness.Rig(tmp_path, Scenario(), skills=("system",), provider_lines=lines)
    peer = FaultPeer([Fault(trickle_s=0.1), Fault()])
    sim: Any = peer  # the rig starts and stops it, and points the daemon at its url
    rig.sim = sim
    with caplog.at_level(logging.INFO):
        async with rig:
            coordinator = rig.rt.parts.coordinator
            coordinator.say("what time is it")
            await until(lambda: peer.sessions_ready == 2, "the stalled session is replaced")
            await until(lambda: rig.rt.connection_state == "connected", "connected again")
            last = coordinator.last_turn
            assert last is not None and last.outcome is TurnOutcome.FAILED
            report = await RuntimeControl(rig.rt).status()
            assert report.provider_stalls == 1
            assert "1 stall" in provider_link_in_words(report)
    messages = [r.getMessage() for r in caplog.records]
    assert any("provider_stalled " in m for m in messages)
    assert any("provider_stalled_heard" in m for m in messages)  # the lost turn's cue played
    assert any("turn_lost_with_connection state=stalled" in m for m in messages)
    assert any("response_retry" in m for m in messages)  # the retry came first
    assert not any("response_silent" in m for m in messages)  # the stall ended it
