"""Sessions that run past each provider's limit, on a simulated clock (issue 14).

A loopback peer plays each service's cap from the frame shapes of the corpus:
OpenAI and xAI end a session at 60 minutes (``session_expired``, then close
1001); a Gemini Live connection gets ``goAway`` after about 10 minutes and the
conversation resumes with the handle. The real transport and cores run turns
every few simulated minutes with the daemon's renewal policy (renew between
turns once the session is older than ``session_renew_s``). What must hold:
every reply completes (no reply is cut mid-sentence by a renewal), a renewal
or resumption happens only between turns, and nothing sent between turns is
lost.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from huxleyd.clock import ManualClock
from huxleyd.providers.base import ConnectionState
from huxleyd.providers.closes import GEMINI_CONNECTION_CAP_S, OPENAI_SESSION_CAP_S
from huxleyd.providers.core import ConnectionCore
from huxleyd.providers.events import ResponseDone, ResponseStatus, SessionReady
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.settings import ProviderSettings
from huxleyd.providers.transport import ProviderConnection
from huxleyd.providers.xai_core import XaiRealtimeCore
from tests.fakes.clock import InstantSleep
from tests.fakes.provider_callbacks import Recorder
from tests.providers import frames

MINUTE = 60.0
TURN_GAP_S = 4 * MINUTE
RENEW_S = ProviderSettings().session_renew_s
PCM_B64 = base64.b64encode(bytes(4800)).decode()
MIC = bytes(24_000 * 2 // 5)  # 200 ms at 24 kHz
MIC_16K = bytes(16_000 * 2 // 5)


@dataclass
class PeerLog:
    """What the peer saw: connections, enforced caps, replies cut, texts heard."""

    connections: int = 0
    caps_enforced: int = 0
    replies_cut: int = 0
    texts: list[str] = field(default_factory=list)
    setups: list[dict[str, Any]] = field(default_factory=list)


Play = Callable[[ServerConnection, PeerLog, float], Awaitable[None]]


@asynccontextmanager
async def peer(play: Play, clock: ManualClock) -> AsyncIterator[tuple[str, PeerLog]]:
    log = PeerLog()

    async def one(ws: ServerConnection) -> None:
        log.connections += 1
        with contextlib.suppress(ConnectionClosed):
            await play(ws, log, clock.monotonic())

    async with serve(one, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v1/realtime", log


def openai_play(clock: ManualClock, *, first: str) -> Play:
    """OpenAI GA / xAI: answers each create with a short spoken reply; 60-minute cap."""

    async def play(ws: ServerConnection, log: PeerLog, started: float) -> None:
        await ws.send(first)
        seq = 0
        async for raw in ws:
            event = json.loads(raw)
            if clock.monotonic() - started >= OPENAI_SESSION_CAP_S:
                log.caps_enforced += 1
                limit = "Your session hit the maximum duration of 60 minutes."
                await ws.send(frames.error("session_expired", limit))
                await ws.close(1001, "")
                return
            kind = event["type"]
            if kind == "session.update":
                await ws.send(frames.session_updated())
            elif kind == "conversation.item.create" and event["item"]["type"] == "message":
                log.texts.append(event["item"]["content"][0]["text"])
            elif kind == "response.create":
                seq += 1
                rid, item = f"resp_{log.connections}_{seq}", f"item_{log.connections}_{seq}"
                await ws.send(frames.response_created(rid))
                for _ in range(3):
                    await ws.send(frames.audio_delta(rid, item, bytes(4800)))
                await ws.send(frames.response_done(rid))

    return play


def gemini_play(clock: ManualClock) -> Play:
    """Gemini Live: setupComplete, handles, a goAway once the connection is ~10 min old
    (sent in the middle of a reply, the worst moment), closing only when the client
    leaves or the time left runs out on its next message."""

    async def play(ws: ServerConnection, log: PeerLog, started: float) -> None:
        setup = json.loads(await ws.recv())["setup"]
        log.setups.append(setup)
        await ws.send(json.dumps({"setupComplete": {}}))
        handle = f"handle-{log.connections}"
        update = {"newHandle": handle, "resumable": True}
        await ws.send(json.dumps({"sessionResumptionUpdate": update}))
        going_away = False
        async for raw in ws:
            message = json.loads(raw)
            age = clock.monotonic() - started
            if going_away and age >= GEMINI_CONNECTION_CAP_S + MINUTE:
                log.caps_enforced += 1  # the client stayed past timeLeft
                await ws.close(1001, "")
                return
            body = message.get("realtimeInput", {})
            if "text" in str(message.get("clientContent", "")):
                turns = message["clientContent"].get("turns") or []
                log.texts += [p["text"] for t in turns for p in t["parts"]]
            if "activityEnd" in body or message.get("clientContent", {}).get("turnComplete"):
                part = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": PCM_B64}}
                chunk = json.dumps({"serverContent": {"modelTurn": {"parts": [part]}}})
                await ws.send(chunk)
                if age >= GEMINI_CONNECTION_CAP_S - MINUTE and not going_away:
                    going_away = True
                    await ws.send(json.dumps({"goAway": {"timeLeft": "60s"}}))
                await ws.send(chunk)
                await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))

    return play


def session_ready_on(conn: ProviderConnection) -> bool:
    return bool(getattr(conn.core, "session_ready", False))


async def run_turns(
    conn: ProviderConnection,
    rec: Recorder,
    clock: ManualClock,
    *,
    turns: int,
    mic: bytes,
    renew_between_turns: bool,
) -> None:
    """``turns`` push-to-talk turns, ``TURN_GAP_S`` apart on the clock, then an inject
    (a text turn) right after each renewal; the daemon's renewal policy in between."""
    for n in range(turns):
        clock.advance(TURN_GAP_S)
        await rec.wait_until(lambda: conn.connected and session_ready_on(conn))
        done = len(rec.of(ResponseDone))
        conn.start_turn()
        conn.append_audio(mic)
        conn.end_turn()
        conn.request_response()
        await rec.wait_for(ResponseDone, done + 1)
        ready = len(rec.of(SessionReady))
        age = conn.session_age_s()
        if renew_between_turns and age is not None and age > RENEW_S:
            conn.renew("session renewal")  # between turns: the reply above is complete
            await rec.wait_for(SessionReady, ready + 1)
            conn.send_user_text(f"inject after renewal {n}")
            conn.request_response()
            await rec.wait_for(ResponseDone, done + 2)


def connection(
    core: ConnectionCore,
    url: str,
    rec: Recorder,
    clock: ManualClock,
    sleep: InstantSleep | None = None,
) -> ProviderConnection:
    sleep = sleep or InstantSleep()
    conn = rec.connection(url, core=core, model="m", api_key="k", sleep=sleep, clock=clock)
    conn.configure(instructions="Be brief.", tools=[], voice="marin")
    return conn


def assert_no_reply_cut(rec: Recorder, log: PeerLog) -> None:
    statuses = {d.status for d in rec.of(ResponseDone)}
    assert statuses == {ResponseStatus.COMPLETED}, statuses
    assert ConnectionState.RECONNECTING not in rec.state_names()
    assert ConnectionState.OFFLINE not in rec.state_names()


async def test_openai_runs_past_its_60_minute_cap_renewing_between_turns() -> None:
    clock, rec = ManualClock(), Recorder()
    async with peer(openai_play(clock, first=frames.session_created()), clock) as (url, log):
        conn = connection(OpenAIRealtimeCore(), url, rec, clock)
        task = asyncio.create_task(conn.run())
        await run_turns(conn, rec, clock, turns=25, mic=MIC, renew_between_turns=True)
        await conn.close()
        await asyncio.wait_for(task, 20)
    assert clock.monotonic() >= 100 * MINUTE  # well past the 60-minute cap
    assert log.caps_enforced == 0  # the device renewed first, between turns
    assert log.connections >= 4
    assert_no_reply_cut(rec, log)
    injects = [t for t in log.texts if t.startswith("inject after renewal")]
    assert len(injects) == log.connections - 1  # none lost to a renewal


async def test_an_idle_openai_session_past_its_cap_comes_back_at_once() -> None:
    clock, rec = ManualClock(), Recorder()
    async with peer(openai_play(clock, first=frames.session_created()), clock) as (url, log):
        sleep = InstantSleep()
        conn = connection(OpenAIRealtimeCore(), url, rec, clock, sleep)
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady)
        clock.advance(OPENAI_SESSION_CAP_S + MINUTE)  # nobody spoke for an hour
        conn.send_user_text("a timer went off")  # the first thing after the idle hour
        conn.request_response()
        await rec.wait_for(SessionReady, 2)  # the cap ended it; a fresh one at once
        conn.send_user_text("a timer went off")
        conn.request_response()
        await rec.wait_for(ResponseDone)
        await conn.close()
        await asyncio.wait_for(task, 20)
    assert log.caps_enforced == 1
    assert ConnectionState.OFFLINE not in rec.state_names()
    assert sleep.delays == []  # no backoff for a cap


async def test_xai_runs_past_its_60_minute_cap_renewing_between_turns() -> None:
    clock, rec = ManualClock(), Recorder()
    created = json.dumps(
        {
            "event_id": "evt_1",
            "type": "conversation.created",
            "conversation": {"id": "conv_1", "object": "realtime.conversation"},
        }
    )
    async with peer(openai_play(clock, first=created), clock) as (url, log):
        conn = connection(XaiRealtimeCore(), url, rec, clock)
        task = asyncio.create_task(conn.run())
        await run_turns(conn, rec, clock, turns=25, mic=MIC, renew_between_turns=True)
        await conn.close()
        await asyncio.wait_for(task, 20)
    assert clock.monotonic() >= 100 * MINUTE
    assert log.caps_enforced == 0
    assert_no_reply_cut(rec, log)


async def test_gemini_resumes_across_go_aways_and_never_cuts_a_reply() -> None:
    clock, rec = ManualClock(), Recorder()
    async with peer(gemini_play(clock), clock) as (url, log):
        conn = connection(GeminiLiveCore(), url, rec, clock)
        task = asyncio.create_task(conn.run())
        # 60 simulated minutes: past the 15-minute audio session limit and several
        # 10-minute connections; Gemini needs no renewal policy of ours.
        await run_turns(conn, rec, clock, turns=15, mic=MIC_16K, renew_between_turns=False)
        await conn.close()
        await asyncio.wait_for(task, 20)
    assert log.connections >= 4
    assert log.caps_enforced == 0  # every goAway was followed before its time ran out
    assert_no_reply_cut(rec, log)
    for setup in log.setups:
        assert setup["contextWindowCompression"] == {"slidingWindow": {}}
    handles = [s["sessionResumption"].get("handle") for s in log.setups]
    assert handles[0] is None
    assert handles[1:] == [f"handle-{n}" for n in range(1, len(handles))]
    audio_per_reply = {d.response_id: d.had_audio for d in rec.of(ResponseDone)}
    assert all(audio_per_reply.values())
