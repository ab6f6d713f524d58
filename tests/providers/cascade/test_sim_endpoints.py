"""The cascade simulator, checked from the other side with the official clients.

The openai package talks to the chat, transcription and Responses endpoints
(it builds its own requests and parses our answers into its typed models);
a plain websockets client plays the ElevenLabs stream-input protocol.
"""

from __future__ import annotations

import base64
import io
import json
import math
import wave
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.responses import Response
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from huxleyd.sim.chat import (
    CascadeSim,
    cascade_script_from_dict,
    check_messages,
    load_cascade_script,
)
from huxleyd.sim.http import HttpServer

SCRIPT = cascade_script_from_dict(
    {
        "turns": [
            {
                "hear": "what time is it",
                "replies": [
                    {"text": "Let me look. <code>get_current_time()</code>", "chunk_chars": 5},
                    {"tool_calls": [{"name": "set_volume", "arguments": {"level": 30}}]},
                    {"text": "It is ten past three."},
                ],
            },
            {"hear": "and now", "replies": [{"error_status": 503, "error_message": "overloaded"}]},
        ],
        "brain": [{"text": "Forty-two."}, {"text": "Slow.", "delay_ms": 5000}],
    }
)


def wav(ms: int, rate_hz: int = 24_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate_hz)
        w.writeframes(bytes(rate_hz * 2 * ms // 1000))
    return out.getvalue()


def client(sim: CascadeSim) -> AsyncOpenAI:
    return AsyncOpenAI(api_key="sk-test", base_url=sim.http_url, max_retries=0)


async def test_streamed_chat_with_text_then_native_tool_calls() -> None:
    async with CascadeSim(SCRIPT, speed=math.inf, synth="tone") as sim, client(sim) as llm:
        messages: Any = [{"role": "user", "content": "what time is it"}]
        stream = await llm.chat.completions.create(model="m", messages=messages, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        assert text == "Let me look. <code>get_current_time()</code>"
        assert sim.chat.requests[0].chunks_sent == math.ceil(len(text) / 5)

        stream = await llm.chat.completions.create(model="m", messages=messages, stream=True)
        calls: dict[int, dict[str, str]] = {}
        finish = None
        async for chunk in stream:
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.id or ""
                if delta.function is not None:
                    call["name"] += delta.function.name or ""
                    call["arguments"] += delta.function.arguments or ""
        assert finish == "tool_calls"
        assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
            ("set_volume", {"level": 30})
        ]
        assert calls[0]["id"].startswith("call_")
        done = await llm.chat.completions.create(model="m", messages=messages)
        assert done.choices[0].message.content == "It is ten past three."
        assert all(r.completed and not r.closed_early for r in sim.chat.requests)
        assert sim.violations == []


async def test_transcription_hears_the_script_and_moves_to_the_next_turn() -> None:
    async with CascadeSim(SCRIPT, speed=math.inf) as sim, client(sim) as asr:
        first = await asr.audio.transcriptions.create(
            model="gpt-4o-mini-transcribe", file=("speech.wav", wav(500), "audio/wav")
        )
        assert first.text == "what time is it"
        second = await asr.audio.transcriptions.create(
            model="whisper-1", file=("speech.wav", wav(250, 16_000), "audio/wav")
        )
        assert second.text == "and now"
        assert [(t.rate_hz, t.duration_ms) for t in sim.chat.transcriptions] == [
            (24_000, 500),
            (16_000, 250),
        ]
        with pytest.raises(openai.APIStatusError) as failed:  # the second turn's reply
            await asr.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        assert failed.value.status_code == 503 and "overloaded" in failed.value.message


async def test_a_transcription_with_a_bad_model_or_file_is_refused() -> None:
    async with CascadeSim(SCRIPT, speed=math.inf) as sim, client(sim) as asr:
        with pytest.raises(openai.BadRequestError, match="unknown transcription model"):
            await asr.audio.transcriptions.create(model="nope", file=("a.wav", wav(100)))
        with pytest.raises(openai.BadRequestError, match="not a WAV"):
            await asr.audio.transcriptions.create(model="whisper-1", file=("a.wav", b"junk"))


async def test_responses_api_answers_in_order_and_a_slow_brain_times_out() -> None:
    async with CascadeSim(SCRIPT, speed=1.0) as sim, client(sim) as brain:
        raw = await brain.responses.with_raw_response.create(
            model="gpt-5", input="meaning of life?"
        )
        Response.model_validate(raw.http_response.json())  # a complete, valid Response
        assert raw.parse().output_text == "Forty-two."
        with pytest.raises(openai.APITimeoutError):
            await brain.responses.create(model="gpt-5", input="slow?", timeout=0.2)
        assert [r.input for r in sim.brain.requests] == ["meaning of life?", "slow?"]
        assert sim.brain.requests[0].answered == "Forty-two."
        assert sim.brain.requests[1].answered is None


async def test_a_stalled_stream_sees_the_client_hang_up() -> None:
    script = cascade_script_from_dict(
        {
            "turns": [
                {
                    "replies": [
                        {"text": "One. Two. Three.", "chunk_chars": 4, "stall_after_chunks": 2}
                    ]
                }
            ]
        }
    )
    async with CascadeSim(script, speed=math.inf) as sim, client(sim) as llm:
        stream = await llm.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "count"}], stream=True
        )
        got = ""
        async for chunk in stream:
            got += chunk.choices[0].delta.content or ""
            if len(got) >= 8:
                break
        await stream.close()
        await sim.wait_until(lambda: sim.chat.requests[0].closed_early)
        assert sim.chat.requests[0].chunks_sent == 2
        assert not sim.chat.requests[0].completed


async def test_release_lets_a_stalled_stream_finish() -> None:
    script = cascade_script_from_dict(
        {"turns": [{"replies": [{"text": "abcdefgh", "chunk_chars": 2, "stall_after_chunks": 1}]}]}
    )
    async with CascadeSim(script, speed=math.inf) as sim, client(sim) as llm:
        stream = await llm.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
        await sim.wait_until(lambda: sim.chat.requests[0].chunks_sent == 1)
        sim.release()
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        assert text == "abcdefgh"


def test_message_rules_catch_unpaired_tool_calls() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert (
        check_messages(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "{}"},
            ],
            None,
        )
        == []
    )
    problems = check_messages(
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "user", "content": "next"},
            {"role": "tool", "tool_call_id": "c9", "content": "{}"},
            {"role": "robot", "content": "x"},
        ],
        [{"type": "function"}],
    )
    assert problems == [
        "tools[0]: expected {type: function, function: {name, ...}}",
        "messages[1]: user message while calls ['c1'] have no output",
        "messages[2]: tool message for 'c9', which no call awaits",
        "messages[3]: unknown role 'robot'",
    ]


async def elevenlabs_session(
    sim: CascadeSim, texts: list[str], **query: str
) -> list[dict[str, Any]]:
    params = "&".join(f"{k}={v}" for k, v in {"output_format": "pcm_24000", **query}.items())
    url = f"{sim.elevenlabs_url}/v1/text-to-speech/voice123/stream-input?{params}"
    received: list[dict[str, Any]] = []
    async with connect(url, additional_headers={"xi-api-key": "el-key"}) as ws:
        await ws.send(json.dumps({"text": " ", "voice_settings": {"stability": 0.5}}))
        for text in texts:
            await ws.send(json.dumps({"text": text, "flush": True}))
        await ws.send(json.dumps({"text": ""}))
        async for frame in ws:
            received.append(json.loads(frame))
    return received


async def test_elevenlabs_stream_input_speaks_flushed_text_then_is_final() -> None:
    async with CascadeSim(SCRIPT, speed=math.inf, synth="tone", elevenlabs_key="el-key") as sim:
        messages = await elevenlabs_session(
            sim, ["Hello there. ", "How are you? "], model_id="eleven_flash_v2_5"
        )
        assert messages[-1]["isFinal"] is True
        audio = [m for m in messages if m.get("audio")]
        pcm = b"".join(base64.b64decode(m["audio"]) for m in audio)
        assert len(pcm) > 0 and len(pcm) % 2 == 0
        voiced = "".join("".join(m["alignment"]["chars"]) for m in audio)
        assert voiced == "Hello there. How are you? "
        session = sim.tts.sessions[0]
        assert session.text == "Hello there. How are you?"
        assert session.generated == ["Hello there. ", "How are you? "]
        assert (session.voice_id, session.model_id, session.flushes) == (
            "voice123",
            "eleven_flash_v2_5",
            2,
        )
        assert session.audio_bytes == len(pcm)
        assert session.final_sent and session.ended_by_client and not session.closed_early


async def test_elevenlabs_refuses_other_formats_and_bad_keys() -> None:
    async with CascadeSim(SCRIPT, speed=math.inf, synth="tone", elevenlabs_key="right") as sim:
        with pytest.raises(InvalidStatus) as refused:
            await elevenlabs_session(sim, ["x "], output_format="mp3_44100_128")
        assert refused.value.response.status_code == 400
        with pytest.raises(InvalidStatus) as unauthorized:
            await elevenlabs_session(sim, ["x "])  # sends el-key
        assert unauthorized.value.response.status_code == 401


async def test_elevenlabs_sees_a_client_that_closes_before_is_final() -> None:
    async with CascadeSim(SCRIPT, speed=20.0, synth="tone") as sim:
        url = f"{sim.elevenlabs_url}/v1/text-to-speech/v/stream-input?output_format=pcm_24000"
        async with connect(url) as ws:
            await ws.send(json.dumps({"text": " "}))
            await ws.send(json.dumps({"text": "A long sentence to read. ", "flush": True}))
            first = json.loads(await ws.recv())
            assert first["audio"]
        await sim.wait_until(lambda: sim.tts.sessions[0].closed_early)
        assert not sim.tts.sessions[0].final_sent


async def test_unknown_routes_answer_404_and_the_server_keeps_serving() -> None:
    server = HttpServer({})
    await server.start()
    try:
        async with AsyncOpenAI(api_key="x", base_url=server.base_url, max_retries=0) as plain:
            for _ in range(2):
                with pytest.raises(openai.NotFoundError):
                    await plain.models.list()
    finally:
        await server.close()


def test_the_shipped_cascade_scripts_load() -> None:
    # In a folder of their own: config/scenarios/*.toml are realtime scenarios.
    scripts = sorted(Path(__file__).parents[3].joinpath("config/scenarios/cascade").glob("*.toml"))
    assert scripts
    for path in scripts:
        assert load_cascade_script(path).turns


async def test_elevenlabs_takes_the_key_in_the_opening_message_too() -> None:
    async with CascadeSim(SCRIPT, speed=math.inf, synth="tone", elevenlabs_key="right") as sim:
        url = f"{sim.elevenlabs_url}/v1/text-to-speech/v/stream-input?output_format=pcm_24000"
        async with connect(url) as ws:
            await ws.send(json.dumps({"text": " ", "xi-api-key": "right"}))
            await ws.send(json.dumps({"text": "Hi. ", "flush": True}))
            await ws.send(json.dumps({"text": ""}))
            frames = [json.loads(f) async for f in ws]
        assert frames[-1]["isFinal"] is True
        async with connect(url) as ws:
            await ws.send(json.dumps({"text": " ", "xi-api-key": "wrong"}))
            await ws.wait_closed()
            assert ws.close_code == 1008
        assert [s.authorized for s in sim.tts.sessions] == [True, False]
