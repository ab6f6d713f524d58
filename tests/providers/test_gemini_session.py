"""Gemini over a real websocket: goAway → resume, reconfiguration, close codes.

The real transport and core against the simulator's Gemini dialect on
loopback (every client message validated there).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from huxleyd.providers.base import ConnectionState
from huxleyd.providers.connection_parts import Endpoint, Timing
from huxleyd.providers.events import ProviderErrorEvent, ResponseDone, SessionReady
from huxleyd.providers.factory import create_core
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.settings import ProviderSettings
from huxleyd.providers.transport import ProviderConnection
from huxleyd.sim.scenario import scenario_from_dict
from huxleyd.sim.server import SimServer
from tests.fakes.provider_callbacks import Recorder

SPEECH = {"say": "words", "tone_hz": 440, "duration_ms": 200}
MS_300 = bytes(9600)  # 300 ms at 16 kHz


@asynccontextmanager
async def session(
    *turns: list[dict[str, Any]],
) -> AsyncIterator[tuple[ProviderConnection, Recorder, SimServer]]:
    table = {"turns": [{"hear": "hi", "responses": r} for r in turns]}
    server = SimServer(scenario_from_dict(table), speed=20.0, synth="tone", dialect="gemini")
    async with server:
        recorder = Recorder()
        settings = ProviderSettings(kind="gemini")
        conn = ProviderConnection(
            create_core(settings),
            Endpoint(url=server.url, model=settings.model),
            on_event=recorder.on_event,
            on_state=recorder.on_state,
            # no waiting after the scripted close
            timing=Timing(backoff=lambda: itertools.repeat(0.01)),
        )
        conn.configure(instructions="Be brief.", tools=[], voice="Puck")
        task = asyncio.create_task(conn.run())
        await recorder.wait_for(SessionReady)
        try:
            yield conn, recorder, server
        finally:
            await conn.close()
            await task


def say(conn: ProviderConnection) -> None:
    conn.start_turn()
    conn.append_audio(MS_300)
    conn.end_turn()
    conn.request_response()


async def test_go_away_resumes_with_the_handle_and_the_next_turn_works() -> None:
    leaving = {**SPEECH, "go_away_s": 30}
    async with session([leaving], [SPEECH]) as (conn, recorder, server):
        say(conn)
        first = await recorder.wait_for(ResponseDone)
        assert first.had_audio
        await recorder.wait_for(SessionReady, 2)  # reconnected by itself after goAway
        gemini = server.record.gemini
        handle = list(gemini.handles_sent)[-1]
        assert gemini.resumed_handles == [handle]
        assert gemini.setups[1]["sessionResumption"] == {"handle": handle}
        assert gemini.go_away_expired == 0  # the client left before the server had to close
        assert ConnectionState.RECONNECTING not in recorder.state_names()  # no backoff
        protocol = conn.core
        assert isinstance(protocol, GeminiLiveCore) and protocol.resumed_connections == 1

        say(conn)
        second = await recorder.wait_for(ResponseDone, 2)
        assert second.had_audio and second.response_id != first.response_id
        [conversation] = gemini.history.values()
        assert conversation == ["user:audio", "model:speech"] * 2
        assert gemini.history_replays == 0
        labels = server.record.types_received()
        second_connection = labels[labels.index("setup", 1) :]
        assert second_connection == [
            "setup",
            "realtimeInput.activityStart",
            "realtimeInput.audio",
            "realtimeInput.activityEnd",
        ]  # the conversation is not set up again
        assert server.violations == [] and server.record.sim_errors == []


async def test_new_instructions_reconnect_with_resumption_between_turns() -> None:
    async with session([SPEECH], [SPEECH]) as (conn, recorder, server):
        say(conn)
        await recorder.wait_for(ResponseDone)
        await server.wait_until(lambda: bool(server.record.gemini.handles_sent))
        conn.configure(instructions="Be very brief.", tools=[], voice="Puck")
        await recorder.wait_for(SessionReady, 2)
        setup = server.record.gemini.setups[1]
        assert setup["systemInstruction"] == {"parts": [{"text": "Be very brief."}]}
        assert setup["sessionResumption"]["handle"] in server.record.gemini.handles_sent
        say(conn)
        await recorder.wait_for(ResponseDone, 2)
        assert server.violations == []


async def test_a_close_code_is_an_error_and_the_session_comes_back() -> None:
    error = {"error": {"code": "server_error", "message": "Internal error encountered."}}
    async with session([error], [SPEECH]) as (conn, recorder, server):
        say(conn)
        failure = await recorder.wait_for(ProviderErrorEvent)
        assert failure == ProviderErrorEvent(
            "internal_error", "Internal error encountered.", recoverable=False
        )
        assert server.record.closes_sent == [(1011, "Internal error encountered.")]
        await recorder.wait_for(SessionReady, 2)
        say(conn)
        assert (await recorder.wait_for(ResponseDone)).had_audio
