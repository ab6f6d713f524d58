"""A renewal waits for the listener, bounded by the time the server gave (issue 25).

A bare websockets peer plays Gemini Live: a reply, ``turnComplete`` and a
``goAway``. The real transport and core decide when to leave; "the reply
has been heard" is a gate the test opens (the daemon hands the turn layer's).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.server import ServerConnection, serve

from huxleyd.clock import ManualClock
from huxleyd.providers.events import AudioChunk, Event, ResponseDone, SessionReady
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.renewal import RENEW_MARGIN_S
from huxleyd.providers.transport import ProviderConnection
from tests.fakes.clock import InstantSleep
from tests.fakes.provider_callbacks import Recorder

PCM = base64.b64encode(bytes(4800)).decode()
TIME_LEFT_S = 20.0
SPENT_S = 5.0
"""The clock moves this much between the goAway (mid-reply) and turnComplete."""


async def accept_session(ws: ServerConnection, served: list[int]) -> int:
    """Gemini's side of a connection's opening: read the setup, complete it and
    give a resumption handle; the connection's number (1 for the first)."""
    served.append(len(served) + 1)
    await ws.recv()  # the setup
    await ws.send(json.dumps({"setupComplete": {}}))
    update = {"newHandle": f"h{len(served)}", "resumable": True}
    await ws.send(json.dumps({"sessionResumptionUpdate": update}))
    return len(served)


@asynccontextmanager
async def gemini_peer() -> AsyncIterator[tuple[str, list[int]]]:
    """Connection 1: a reply with a goAway in its middle; later ones just serve."""
    connections: list[int] = []

    async def one(ws: ServerConnection) -> None:
        if await accept_session(ws, connections) == 1:
            await ws.recv()  # the user's text turn
            part = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": PCM}}
            chunk = {"serverContent": {"modelTurn": {"parts": [part]}}}
            await ws.send(json.dumps(chunk))
            await ws.send(json.dumps({"goAway": {"timeLeft": f"{TIME_LEFT_S:g}s"}}))
            await ws.send(json.dumps(chunk))  # its arrival moves the clock (ClockedRecorder)
            await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))
        await ws.wait_closed()

    async with serve(one, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws", connections


class ClockedRecorder(Recorder):
    """Moves the clock by SPENT_S when the reply's second chunk (after the goAway) arrives."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self._clock = clock

    def on_event(self, event: Event) -> None:
        super().on_event(event)
        if isinstance(event, AudioChunk) and len(self.of(AudioChunk)) == 2:
            self._clock.advance(SPENT_S)


def connect(url: str, rec: Recorder, clock: ManualClock, sleep: InstantSleep) -> ProviderConnection:
    conn = rec.connection(
        url, core=GeminiLiveCore(), model="m", api_key="k", sleep=sleep, clock=clock
    )
    conn.configure(instructions="Be brief.", tools=[], voice="Puck")
    return conn


class Listener:
    """The turn layer as a renewal sees it: a reply is playing until ``heard`` is set."""

    def __init__(self) -> None:
        self.heard = asyncio.Event()
        self.asked = asyncio.Event()

    @property
    def reply_heard_now(self) -> bool:
        return self.heard.is_set()

    async def reply_heard(self) -> None:
        self.asked.set()
        await self.heard.wait()


async def ask(conn: ProviderConnection, rec: Recorder) -> None:
    await rec.wait_for(SessionReady, 1)
    conn.send_user_text("hello")
    conn.request_response()
    await rec.wait_for(ResponseDone, 1)


async def test_a_go_away_renews_only_once_the_reply_was_heard() -> None:
    clock = ManualClock()
    rec = ClockedRecorder(clock)

    async def never(delays: list[float]) -> None:
        await asyncio.Event().wait()  # the bound never runs out here

    sleep = InstantSleep(hook=never)
    listener = Listener()
    async with gemini_peer() as (url, connections):
        conn = connect(url, rec, clock, sleep)
        conn.hold_renewals_until(listener)
        task = asyncio.create_task(conn.run())
        await ask(conn, rec)
        await asyncio.wait_for(listener.asked.wait(), 20)
        # turnComplete came and the core wants to resume: the socket stays while
        # the reply plays (a barge-in now still reaches this session).
        assert connections == [1] and conn.connected
        listener.heard.set()
        await rec.wait_for(SessionReady, 2)
        assert connections == [1, 2]
        await conn.close()
        await asyncio.wait_for(task, 20)


async def test_a_go_away_renewal_leaves_before_the_time_the_server_gave_runs_out() -> None:
    clock, sleep = ManualClock(), InstantSleep()
    rec = ClockedRecorder(clock)

    async with gemini_peer() as (url, connections):
        conn = connect(url, rec, clock, sleep)
        conn.hold_renewals_until(Listener())  # never heard
        task = asyncio.create_task(conn.run())
        await ask(conn, rec)
        await rec.wait_for(SessionReady, 2)  # renewed anyway, at the bound
        await conn.close()
        await asyncio.wait_for(task, 20)
    # Counted from the goAway (mid-reply), not from turnComplete.
    assert sleep.delays[:1] == [pytest.approx(TIME_LEFT_S - SPENT_S - RENEW_MARGIN_S)]
    assert connections == [1, 2]


async def test_a_wait_ends_with_its_connection_and_blocks_no_later_renewal() -> None:
    # The server closed while a renewal waited for the listener (the reply was
    # still playing): the next connection renews as soon as it is asked to.
    async def never(delays: list[float]) -> None:
        await asyncio.Event().wait()

    clock, sleep = ManualClock(), InstantSleep(hook=never)
    rec, listener = ClockedRecorder(clock), Listener()
    served: list[int] = []

    async def one(ws: ServerConnection) -> None:
        served.append(len(served) + 1)
        await ws.recv()  # the setup
        await ws.send(json.dumps({"setupComplete": {}}))
        if len(served) == 1:
            await ws.send(json.dumps({"goAway": {"timeLeft": "20s"}}))
            await listener.asked.wait()  # the renewal waits for the listener
            await ws.close(1001, "going away")  # the server closes first
            return
        await ws.wait_closed()

    async with serve(one, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        conn = connect(f"ws://127.0.0.1:{port}/ws", rec, clock, sleep)
        conn.hold_renewals_until(listener)
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady, 2)
        listener.heard.set()  # nothing plays any more
        conn.renew("session renewal")
        await rec.wait_for(SessionReady, 3)
        assert served == [1, 2, 3]
        await conn.close()
        await asyncio.wait_for(task, 20)


async def test_a_new_connection_does_not_keep_the_old_go_away_deadline() -> None:
    # Connection 1 got a goAway (20 s left) and was renewed. Thirty seconds on,
    # a renewal of connection 2 falls due while a reply plays: it must wait
    # for the listener. Kept, the old deadline (long past) would let it close
    # at once and cut what the user is hearing.
    async def never(delays: list[float]) -> None:
        await asyncio.Event().wait()  # the bound never runs out here

    clock, sleep = ManualClock(), InstantSleep(hook=never)
    rec, listener = Recorder(), Listener()
    listener.heard.set()  # nothing plays: the goAway renews at once
    served: list[int] = []

    async def one(ws: ServerConnection) -> None:
        if await accept_session(ws, served) == 1:
            await ws.send(json.dumps({"goAway": {"timeLeft": f"{TIME_LEFT_S:g}s"}}))
        await ws.wait_closed()

    async with serve(one, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        conn = connect(f"ws://127.0.0.1:{port}/ws", rec, clock, sleep)
        conn.hold_renewals_until(listener)
        task = asyncio.create_task(conn.run())
        await rec.wait_for(SessionReady, 2)
        assert served == [1, 2]
        clock.advance(TIME_LEFT_S + 10.0)  # the old connection's deadline is long past
        listener.heard.clear()  # a reply is playing
        conn.renew("session renewal")
        waits = asyncio.ensure_future(listener.asked.wait())
        renews = asyncio.ensure_future(rec.wait_for(SessionReady, 3))
        await asyncio.wait({waits, renews}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        renews.cancel()
        await asyncio.gather(renews, return_exceptions=True)
        assert waits.done(), "the renewal did not wait for the reply to be heard"
        assert served == [1, 2] and conn.connected, "the renewal cut the reply"
        listener.heard.set()
        await rec.wait_for(SessionReady, 3)
        assert served == [1, 2, 3]
        await conn.close()
        await asyncio.wait_for(task, 20)
