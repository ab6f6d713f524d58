"""A bare websocket client for the simulator that checks every server frame."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from huxleyd.sim.server import SimServer
from huxleyd.sim.validate import validate_server_event

PTT_SESSION: dict[str, Any] = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None}
        },
    },
}


class RawClient:
    """Sends dicts as JSON; receives frames validated as GA server events."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event))

    async def recv(self, timeout_s: float = 10.0) -> dict[str, Any]:
        frame = await asyncio.wait_for(self.ws.recv(), timeout_s)
        validate_server_event(frame)  # the sim must send only what the real server would
        event: dict[str, Any] = json.loads(frame)
        self.events.append(event)
        return event

    async def until(self, event_type: str) -> list[dict[str, Any]]:
        """Every event up to and including the first of ``event_type``."""
        seen: list[dict[str, Any]] = []
        while True:
            event = await self.recv()
            seen.append(event)
            if event["type"] == event_type:
                return seen

    async def audio_turn(self, ms: int = 300) -> None:
        pcm = bytes(48 * ms)
        await self.send({"type": "input_audio_buffer.clear"})
        await self.send({"type": "input_audio_buffer.append", "audio": b64(pcm)})
        await self.send({"type": "input_audio_buffer.commit"})


def b64(pcm: bytes) -> str:
    return base64.b64encode(pcm).decode("ascii")


def types(events: list[dict[str, Any]]) -> list[str]:
    """Event types with runs of the same type collapsed (deltas)."""
    out: list[str] = []
    for event in events:
        if not out or out[-1] != event["type"]:
            out.append(event["type"])
    return out


@asynccontextmanager
async def raw_client(sim: SimServer, *, configure: bool = True) -> AsyncIterator[RawClient]:
    async with connect(sim.url + "?model=gpt-realtime", proxy=None) as ws:
        client = RawClient(ws)
        created = await client.recv()
        assert created["type"] == "session.created"
        if configure:
            await client.send(PTT_SESSION)
            await client.until("session.updated")
        yield client
