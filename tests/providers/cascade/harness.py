"""A cascade connection wired to the cascade simulator, recorded by the provider Recorder."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from huxleyd.providers.cascade.factory import (
    create_chat_model,
    create_synthesizer,
    create_transcriber,
)
from huxleyd.providers.cascade.llm import ChatModel
from huxleyd.providers.cascade.provider import CascadeConnection
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.sim.chat import CascadeScript, CascadeSim, cascade_script_from_dict
from tests.fakes.provider_callbacks import Recorder

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


TIME_TURN = cascade_script_from_dict(
    {
        "turns": [
            {
                "hear": "what time is it",
                "replies": [
                    {"text": "Let me look at the clock. <code>get_current_time()</code>"},
                    {"text": "It is ten past three."},
                ],
            }
        ]
    }
)


STORY = cascade_script_from_dict(
    {
        "turns": [
            {
                "hear": "tell me a story",
                "replies": [
                    {
                        "text": "Once upon a time there was a computer. It had a button "
                        "and a speaker. It talked all day long.",
                        "chunk_chars": 8,
                        "stall_after_chunks": 6,  # 48 characters: the first sentence and a bit
                    }
                ],
            }
        ]
    }
)
FIRST = "Once upon a time there was a computer."


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
