"""A cascade connection wired to the cascade simulator, and a recorder of its events."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from huxleyd.providers.base import ConnectionStatus
from huxleyd.providers.cascade.factory import (
    create_chat_model,
    create_synthesizer,
    create_transcriber,
)
from huxleyd.providers.cascade.llm import ChatModel
from huxleyd.providers.cascade.provider import CascadeConnection
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.events import AudioChunk, Event, ResponseDone, ToolCall
from huxleyd.sim.chat import CascadeScript, CascadeSim

E = TypeVar("E")

TIME_TOOL: dict[str, Any] = {
    "name": "get_current_time",
    "description": "Get the current local date and time.",
    "parameters": {"type": "object", "properties": {}},
}
VOLUME_TOOL: dict[str, Any] = {
    "name": "set_volume",
    "description": "Set the speaker volume from 0 to 100.",
    "parameters": {
        "type": "object",
        "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 100}},
        "required": ["level"],
        "additionalProperties": False,
    },
}

SPEECH_24K_500MS = (bytes(range(256)) * 94)[:24_000]
"""500 ms of PCM16 at 24 kHz (what the recogniser gets does not matter to the sim)."""


class Recorder:
    """Collects events and connection states; ``wait`` for a condition on them."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.states: list[str] = []
        self.forward: Callable[[Event], None] | None = None
        """Also hand each event on (to a coordinator)."""
        self._changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()
        if self.forward is not None:
            self.forward(event)

    def on_state(self, status: ConnectionStatus) -> None:
        self.states.append(str(status.state))
        self._changed.set()

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def names(self) -> list[str]:
        """Event type names, consecutive AudioChunks folded into one."""
        out: list[str] = []
        for event in self.events:
            name = type(event).__name__
            if not (name == "AudioChunk" and out and out[-1] == name):
                out.append(name)
        return out

    def audio(self, response_id: str | None = None) -> bytes:
        return b"".join(c.pcm for c in self.of(AudioChunk) if response_id in (None, c.response_id))

    def done(self) -> list[ResponseDone]:
        return self.of(ResponseDone)

    def calls(self) -> list[ToolCall]:
        return self.of(ToolCall)

    async def wait(self, predicate: Callable[[], bool], timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()


@asynccontextmanager
async def cascade(
    script: CascadeScript,
    *,
    speed: float = math.inf,
    tools: list[dict[str, Any]] | None = None,
    llm: Callable[[ChatModel], ChatModel] | None = None,
    **overrides: Any,
) -> AsyncIterator[tuple[CascadeConnection, Recorder, CascadeSim]]:
    """A running connection on a running sim (code prompt unless ``native_tools=True``).

    ``llm`` may wrap the chat model (a fake in front of the real one).
    """
    async with CascadeSim(script, speed=speed, synth="tone") as sim:
        settings = dataclasses.replace(
            sim.settings_for(CascadeSettings(native_tools=False)), **overrides
        )
        recorder = Recorder()
        model = create_chat_model(settings, "sk-test")
        conn = CascadeConnection(
            settings,
            transcriber=create_transcriber(settings, "sk-test"),
            llm=llm(model) if llm is not None else model,
            synthesizer=create_synthesizer(settings),
            on_event=recorder,
            on_state=recorder.on_state,
            url=settings.llm_url,
        )
        runner = asyncio.get_running_loop().create_task(conn.run())
        conn.configure(
            instructions="You are a helpful voice assistant. Be brief.",
            tools=[TIME_TOOL, VOLUME_TOOL] if tools is None else tools,
            voice="unused",
        )
        try:
            yield conn, recorder, sim
        finally:
            await conn.close()
            await runner


def press(conn: CascadeConnection, pcm: bytes = SPEECH_24K_500MS) -> None:
    """Push-to-talk as the coordinator does it: start, audio in 20 ms frames, end, respond."""
    conn.start_turn()
    for start in range(0, len(pcm), 960):
        conn.append_audio(pcm[start : start + 960])
    conn.end_turn()
    conn.request_response()
