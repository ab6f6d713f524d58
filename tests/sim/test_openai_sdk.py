"""The official ``openai`` SDK completes a turn against the simulator.

A check from the other side: the SDK builds its own URL, headers and client
events, and parses our server events into its typed models.
"""

from __future__ import annotations

import base64
import math

from openai import AsyncOpenAI
from openai.types.realtime import (
    ResponseAudioDeltaEvent,
    ResponseDoneEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    SessionCreatedEvent,
    SessionUpdatedEvent,
)

from huxleyd.sim.scenario import scenario_from_dict
from huxleyd.sim.server import SimServer
from huxleyd.sim.speech import tone_speech

SCENARIO = scenario_from_dict(
    {
        "turns": [
            {
                "hear": "turn it down to thirty",
                "responses": [
                    {"tool_calls": [{"name": "set_volume", "arguments": {"level": 30}}]},
                    {"say": "Volume thirty."},
                ],
            }
        ]
    }
)


async def test_the_official_sdk_completes_a_tool_turn_against_the_sim() -> None:
    async with SimServer(SCENARIO, speed=math.inf, synth="tone", api_key="sk-test") as sim:
        client = AsyncOpenAI(api_key="sk-test", websocket_base_url=sim.base_url)
        async with client.realtime.connect(model="gpt-realtime") as conn:
            assert isinstance(await conn.recv(), SessionCreatedEvent)
            await conn.session.update(
                session={
                    "type": "realtime",
                    "instructions": "Be brief.",
                    "audio": {
                        "input": {
                            "format": {"type": "audio/pcm", "rate": 24000},
                            "turn_detection": None,
                        },
                        "output": {"voice": "marin"},
                    },
                    "tools": [
                        {
                            "type": "function",
                            "name": "set_volume",
                            "parameters": {
                                "type": "object",
                                "properties": {"level": {"type": "integer"}},
                            },
                        }
                    ],
                }
            )
            updated = await conn.recv()
            assert isinstance(updated, SessionUpdatedEvent)
            await conn.input_audio_buffer.append(audio=base64.b64encode(bytes(9600)).decode())
            await conn.input_audio_buffer.commit()
            await conn.response.create()

            call = None
            async for event in conn:
                if isinstance(event, ResponseFunctionCallArgumentsDoneEvent):
                    call = event
                if isinstance(event, ResponseDoneEvent):
                    break
            assert call is not None
            assert (call.name, call.arguments) == ("set_volume", '{"level":30}')

            await conn.conversation.item.create(
                item={"type": "function_call_output", "call_id": call.call_id, "output": "{}"}
            )
            await conn.response.create()
            audio = b""
            async for event in conn:
                if isinstance(event, ResponseAudioDeltaEvent):
                    audio += base64.b64decode(event.delta)
                if isinstance(event, ResponseDoneEvent):
                    assert event.response.status == "completed"
                    break
            assert audio == tone_speech("Volume thirty.")

        assert sim.violations == []
        assert sim.record.sim_errors == []
        [handshake] = sim.handshakes
        assert handshake.path == "/v1/realtime?model=gpt-realtime"
        assert handshake.authorized
        assert (handshake.user_agent or "").startswith("AsyncOpenAI/Python")
        assert [type(e).__name__ for e in sim.received] == [
            "SessionUpdateEvent",
            "InputAudioBufferAppendEvent",
            "InputAudioBufferCommitEvent",
            "ResponseCreateEvent",
            "ConversationItemCreateEvent",
            "ResponseCreateEvent",
        ]
