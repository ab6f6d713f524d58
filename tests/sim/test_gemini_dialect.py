"""The simulator in Gemini Live's dialect, as a bare client sees it.

Server messages arrive as JSON in binary frames (as from the real server)
and each is checked against ``google.genai.types.LiveServerMessage`` when
google-genai is installed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from huxleyd.sim.gemini_validate import HAVE_GENAI, validate_gemini_server_message
from huxleyd.sim.scenario import scenario_from_dict
from huxleyd.sim.server import SimServer

SETUP: dict[str, Any] = {
    "setup": {
        "model": "models/gemini-live-2.5-flash-preview",
        "generationConfig": {"responseModalities": ["AUDIO"]},
        "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}},
        "inputAudioTranscription": {},
        "outputAudioTranscription": {},
        "sessionResumption": {},
    }
}
START: dict[str, Any] = {"realtimeInput": {"activityStart": {}}}
END: dict[str, Any] = {"realtimeInput": {"activityEnd": {}}}
SPEECH = {"say": "two words", "tone_hz": 440, "duration_ms": 200}
LONG = {"say": "a long story", "tone_hz": 330, "duration_ms": 5000}


def audio(ms: int = 300) -> dict[str, Any]:
    data = base64.b64encode(bytes(32 * ms)).decode()
    return {"realtimeInput": {"audio": {"data": data, "mimeType": "audio/pcm;rate=16000"}}}


class GeminiClient:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def recv(self) -> dict[str, Any]:
        frame = await asyncio.wait_for(self.ws.recv(), 10)
        assert isinstance(frame, bytes), "the server sends JSON in binary frames"
        message: dict[str, Any] = json.loads(frame)
        validate_gemini_server_message(message)
        return message

    async def until(self, key: str, inner: str | None = None) -> list[dict[str, Any]]:
        """Messages up to the first with ``key`` (and ``inner`` inside it)."""
        seen = []
        while True:
            message = await self.recv()
            seen.append(message)
            if key in message and (inner is None or inner in message[key]):
                return seen

    async def turn(self, ms: int = 300) -> None:
        await self.send(START)
        await self.send(audio(ms))
        await self.send(END)


@asynccontextmanager
async def gemini(
    server: SimServer, setup: dict[str, Any] | None = SETUP
) -> AsyncIterator[GeminiClient]:
    async with connect(server.url_for("gemini"), proxy=None) as ws:
        client = GeminiClient(ws)
        if setup is not None:
            await client.send(setup)
            assert await client.recv() == {"setupComplete": {}}
        yield client


def sim(*turns: list[dict[str, Any]], speed: float = math.inf, **kwargs: Any) -> SimServer:
    table = {"turns": [{"hear": "what time is it", "responses": r} for r in turns]}
    return SimServer(scenario_from_dict(table), speed=speed, synth="tone", **kwargs)


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for message in messages:
        key = next(iter(message))
        label = f"{key}.{next(iter(message[key]))}" if key == "serverContent" else key
        if not out or out[-1] != label:
            out.append(label)
    return out


async def close_code(client: GeminiClient) -> int | None:
    with pytest.raises(ConnectionClosed):
        while True:
            await client.recv()
    return client.ws.close_code


async def test_a_push_to_talk_turn() -> None:
    async with sim([SPEECH]) as server, gemini(server) as client:
        await client.turn()
        seen = await client.until("sessionResumptionUpdate")
        order = kinds(seen)
        assert order[0] == "serverContent.inputTranscription"
        assert {"serverContent.modelTurn", "serverContent.outputTranscription"} <= set(order)
        assert order[-3:] == [
            "serverContent.generationComplete",
            "serverContent.turnComplete",
            "sessionResumptionUpdate",
        ]
        assert seen[0]["serverContent"]["inputTranscription"]["text"] == "what time is it"
        part = seen[1]["serverContent"]["modelTurn"]["parts"][0]["inlineData"]
        assert part["mimeType"] == "audio/pcm;rate=24000"
        assert server.record.committed_ms == [300.0]
        assert server.record.types_received() == [
            "setup",
            "realtimeInput.activityStart",
            "realtimeInput.audio",
            "realtimeInput.activityEnd",
        ]
        assert server.violations == []


async def test_the_setup_must_come_first() -> None:
    async with sim() as server, gemini(server, setup=None) as client:
        await client.send(START)
        assert await close_code(client) == 1007
        assert [v.problem for v in server.violations] == ["the first message must be setup"]


async def test_activities_need_automatic_detection_disabled() -> None:
    vad_on = {"setup": {**SETUP["setup"], "realtimeInputConfig": {}}}
    async with sim() as server, gemini(server, setup=vad_on) as client:
        await client.send(START)
        assert await close_code(client) == 1007
        assert "automaticActivityDetection.disabled" in server.violations[0].problem


async def test_audio_outside_an_activity_is_a_violation() -> None:
    async with sim() as server, gemini(server) as client:
        await client.send(audio())
        await client.send(END)
        await asyncio.sleep(0.05)
        assert [v.event for v in server.violations] == [
            "realtimeInput.audio",
            "realtimeInput.activityEnd",
        ]


@pytest.mark.skipif(not HAVE_GENAI, reason="google-genai is not installed")
async def test_messages_are_validated_by_the_google_genai_types() -> None:
    async with sim() as server, gemini(server) as client:
        await client.send({"realtimeInput": {"activityBegin": {}}})
        assert await close_code(client) == 1007
        assert "realtimeInput" in server.violations[0].problem
    bad_config = {
        "setup": {**SETUP["setup"], "realtimeInputConfig": {"activityHandlings": "NO_INTERRUPTION"}}
    }
    async with sim() as server, gemini(server, setup=None) as client:
        await client.send(bad_config)
        assert await close_code(client) == 1007
        assert "realtimeInputConfig" in server.violations[0].problem


async def test_two_top_level_keys_are_refused_with_or_without_google_genai() -> None:
    async with sim() as server, gemini(server) as client:
        await client.send({**START, **{"clientContent": {"turnComplete": True}}})
        assert await close_code(client) == 1007
        assert "exactly one top-level key" in server.violations[0].problem


async def test_tool_calls_wait_for_the_tool_response() -> None:
    call = {"say": "", "tool_calls": [{"name": "get_current_time", "arguments": {"tz": "UTC"}}]}
    async with sim([call, SPEECH]) as server, gemini(server) as client:
        await client.turn()
        seen = await client.until("toolCall")
        [function_call] = seen[-1]["toolCall"]["functionCalls"]
        assert function_call["name"] == "get_current_time"
        assert function_call["args"] == {"tz": "UTC"}
        response = {"id": function_call["id"], "name": "get_current_time", "response": {"t": 1}}
        await client.send({"toolResponse": {"functionResponses": [response]}})
        await client.until("serverContent", "turnComplete")
        assert json.loads(server.record.tool_outputs[function_call["id"]]) == {"t": 1}
        assert server.violations == []


async def test_a_new_activity_interrupts_the_reply_and_cancels_waiting_calls() -> None:
    call = {"say": "", "tool_calls": [{"name": "get_current_time"}]}
    async with sim([LONG], [call], speed=1.0) as server, gemini(server) as client:
        await client.turn()
        await client.until("serverContent", "modelTurn")
        await client.send(START)
        await client.until("serverContent", "interrupted")
        await client.send(audio())
        await client.send(END)
        seen = await client.until("toolCall")
        call_id = seen[-1]["toolCall"]["functionCalls"][0]["id"]
        await client.send(START)
        cancelled = await client.until("toolCallCancellation")
        assert cancelled[-1]["toolCallCancellation"]["ids"] == [call_id]
        # An output that crossed the cancellation is harmless.
        response = {"id": call_id, "name": "get_current_time", "response": {}}
        await client.send({"toolResponse": {"functionResponses": [response]}})
        await asyncio.sleep(0.05)
        assert server.violations == []


@pytest.mark.parametrize(("code", "close"), [("invalid_argument", 1007), ("server_error", 1011)])
async def test_a_scripted_error_is_a_close_code(code: str, close: int) -> None:
    error = {"error": {"code": code, "message": "simulated"}}
    async with sim([error]) as server, gemini(server) as client:
        await client.turn()
        assert await close_code(client) == close
        assert client.ws.close_reason == "simulated"
        assert server.record.closes_sent == [(close, "simulated")]


async def test_a_handle_resumes_the_conversation_and_an_unknown_one_is_refused() -> None:
    async with sim([SPEECH], [SPEECH]) as server:
        async with gemini(server) as client:
            await client.turn()
            update = (await client.until("sessionResumptionUpdate"))[-1]
        handle = update["sessionResumptionUpdate"]["newHandle"]
        assert update["sessionResumptionUpdate"]["resumable"] is True
        resume = {"setup": {**SETUP["setup"], "sessionResumption": {"handle": handle}}}
        async with gemini(server, setup=resume) as client:
            await client.turn()
            await client.until("sessionResumptionUpdate")
        [conversation] = server.record.gemini.history.values()
        assert conversation == ["user:audio", "model:speech"] * 2
        assert server.record.gemini.resumed_handles == [handle]
        stale = {"setup": {**SETUP["setup"], "sessionResumption": {"handle": "nope"}}}
        async with gemini(server, setup=None) as client:
            await client.send(stale)
            assert await close_code(client) == 1008


async def test_go_away_then_the_socket_closes_when_the_time_is_up() -> None:
    leaving = {**SPEECH, "go_away_s": 0.2}
    async with sim([leaving], speed=1.0) as server, gemini(server) as client:
        await client.turn()
        seen = await client.until("goAway")
        assert seen[-1]["goAway"] == {"timeLeft": "0.2s"}
        assert await close_code(client) == 1000
        assert server.record.gemini.go_away_expired == 1


@pytest.mark.parametrize("version", ["v1beta", "v1alpha", "v1"])
async def test_every_api_version_path_and_the_key_are_accepted(version: str) -> None:
    path = f"/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent"
    async with sim(api_key="g-key") as server:
        url = server.url_for("gemini").replace(
            "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent", path
        )
        async with connect(url, additional_headers={"x-goog-api-key": "g-key"}, proxy=None):
            pass
        async with connect(url + "?key=g-key", proxy=None):
            pass
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers={"x-goog-api-key": "no"}, proxy=None):
                pass
        assert refused.value.response.status_code == 401
