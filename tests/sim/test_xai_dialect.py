"""The simulator in xAI's dialect, as a bare client sees it at /xai/v1/realtime."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from huxleyd.sim.scenario import scenario_from_dict
from huxleyd.sim.server import SimServer
from huxleyd.sim.xai_session import check_server_event
from tests.sim.client import b64

FLAT_PTT = {
    "type": "session.update",
    "session": {
        "voice": "eve",
        "turn_detection": {"type": None},
        "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}},
    },
}
SPEECH = {"say": "A reply", "tone_hz": 440, "duration_ms": 200}


class XaiClient:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event))

    async def recv(self) -> dict[str, Any]:
        event: dict[str, Any] = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
        check_server_event(event)
        return event

    async def until(self, event_type: str) -> list[str]:
        seen = []
        while True:
            event = await self.recv()
            seen.append(event["type"])
            if event["type"] == event_type:
                return seen


@asynccontextmanager
async def xai(server: SimServer) -> AsyncIterator[XaiClient]:
    async with connect(server.url_for("xai"), proxy=None) as ws:
        yield XaiClient(ws)


def sim(*responses: dict[str, Any]) -> SimServer:
    turns = [{"hear": "hi", "responses": list(responses)}]
    return SimServer(scenario_from_dict({"turns": turns}), speed=math.inf, synth="tone")


async def test_session_created_then_conversation_created_then_the_flat_session_applies() -> None:
    async with sim() as server, xai(server) as client:
        first = await client.recv()
        assert first["type"] == "session.created"
        assert "type" not in first["session"] and first["session"]["voice"] == "eve"
        second = await client.recv()
        assert second["type"] == "conversation.created"
        assert second["conversation"]["object"] == "realtime.conversation"
        await client.send(FLAT_PTT)
        updated = await client.recv()
        assert updated["type"] == "session.updated"
        assert updated["session"]["voice"] == "eve"
        assert updated["session"]["turn_detection"] == {"type": None}
        assert "type" not in updated["session"]
        assert server.violations == []


async def test_a_push_to_talk_turn_and_no_ga_only_events() -> None:
    async with sim(SPEECH) as server, xai(server) as client:
        await client.until("conversation.created")
        await client.send(FLAT_PTT)
        await client.until("session.updated")
        await client.send({"type": "input_audio_buffer.append", "audio": b64(bytes(9600))})
        await client.send({"type": "input_audio_buffer.commit"})
        await client.send({"type": "response.create"})
        seen = await client.until("response.done")
        assert "input_audio_buffer.committed" in seen
        assert "response.output_audio.delta" in seen
        assert "conversation.item.done" not in seen  # xAI has no such event
        assert server.record.committed_ms == [200.0]
        assert server.violations == []


async def test_ga_shapes_and_unsupported_events_are_violations() -> None:
    async with sim() as server, xai(server) as client:
        await client.until("conversation.created")
        await client.send({"type": "session.update", "session": {"type": "realtime"}})
        error = await client.recv()
        assert error["type"] == "error" and "no 'type'" in error["error"]["message"]
        await client.send({"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": 1})
        error = await client.recv()
        assert "not supported" in error["error"]["message"]
        problems = [v.problem for v in server.violations]
        assert len(problems) == 2 and "not supported by the xAI" in problems[1]


async def test_leaving_server_vad_on_for_push_to_talk_is_a_violation() -> None:
    async with sim(SPEECH) as server, xai(server) as client:
        await client.until("conversation.created")
        await client.send({"type": "input_audio_buffer.append", "audio": b64(bytes(9600))})
        await client.send({"type": "input_audio_buffer.commit"})
        await client.until("input_audio_buffer.committed")
        assert [v.event for v in server.violations] == ["input_audio_buffer.commit"]


async def test_one_response_at_a_time() -> None:
    long = {"say": "long", "tone_hz": 330, "duration_ms": 4000}
    server = SimServer(
        scenario_from_dict({"turns": [{"responses": [long]}]}), speed=1.0, synth="tone"
    )
    async with server, xai(server) as client:
        await client.until("conversation.created")
        await client.send({"type": "response.create"})
        await client.until("response.created")
        await client.send({"type": "response.create"})
        await client.until("error")
        assert server.record.errors_sent == ["conversation_already_has_active_response"]
