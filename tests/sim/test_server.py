"""The simulator as a client sees it: a faithful GA peer that answers a script."""

from __future__ import annotations

import asyncio
import base64
import json
import math
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError, InvalidStatus

from huxleyd.pcm import BYTES_PER_MS
from huxleyd.sim.scenario import DEFAULT_REPLY, scenario_from_dict
from huxleyd.sim.server import SimServer
from huxleyd.sim.speech import tone_speech
from tests.sim.client import raw_client, types

TIME_TURN = {
    "hear": "what time is it",
    "responses": [
        {"say": "Let me look.", "tool_calls": [{"name": "get_current_time"}]},
        {"say": "Ten past three."},
    ],
}
WORD = "response.output_audio_transcript.delta"
LONG_TONE = {
    "hear": "story",
    "responses": [{"say": "A long story", "tone_hz": 330, "duration_ms": 4000}],
}


def sim(turns: list[dict[str, Any]] | None = None, **kwargs: Any) -> SimServer:
    kwargs.setdefault("speed", math.inf)
    return SimServer(scenario_from_dict({"turns": turns or []}), synth="tone", **kwargs)


async def test_session_created_first_then_updates_merge_into_the_session() -> None:
    async with sim() as server, raw_client(server, configure=False) as client:
        created = client.events[0]["session"]
        assert created["audio"]["input"]["turn_detection"]["type"] == "server_vad"
        await client.send(
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "instructions": "Be brief.",
                    "audio": {"input": {"turn_detection": None}, "output": {"voice": "cedar"}},
                },
            }
        )
        [updated] = await client.until("session.updated")
        session = updated["session"]
        assert session["instructions"] == "Be brief."
        assert session["audio"]["input"]["turn_detection"] is None
        assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
        assert session["audio"]["output"]["voice"] == "cedar"
        assert server.violations == []


async def test_an_invalid_event_gets_an_error_and_is_recorded_and_the_session_goes_on() -> None:
    async with sim() as server, raw_client(server) as client:
        await client.send({"type": "session.update", "session": {"modalities": ["audio"]}})
        [error] = await client.until("error")
        assert error["error"]["code"] == "invalid_event"
        await client.send({"type": "input_audio_buffer.append", "audio": "AAAA", "extra": 1})
        await client.until("error")
        await client.ws.send(b"\x00\x01")
        await client.until("error")
        assert [v.event for v in server.violations][2] == "(binary)"
        assert "Field required" in server.violations[0].problem
        assert "$.extra" in server.violations[1].problem
        await client.send({"type": "input_audio_buffer.clear"})
        await client.until("input_audio_buffer.cleared")  # still talking to us
        assert len(server.received) == 2  # the PTT session.update and the clear
        assert [r["type"] for r in server.raw] == ["session.update", "input_audio_buffer.clear"]


async def test_committing_less_than_100_ms_is_refused_like_the_real_server() -> None:
    async with sim() as server, raw_client(server) as client:
        await client.send({"type": "input_audio_buffer.append", "audio": "AAAA"})
        await client.send({"type": "input_audio_buffer.commit", "event_id": "evt_1"})
        [error] = await client.until("error")
        assert error["error"]["code"] == "input_audio_buffer_commit_empty"
        assert error["error"]["event_id"] == "evt_1"
        assert "100ms" in error["error"]["message"]
        assert server.violations == []  # a refused commit is protocol, not a violation


async def test_an_audio_turn_is_committed_transcribed_and_answered_in_ga_order() -> None:
    async with sim([TIME_TURN]) as server, raw_client(server) as client:
        await client.send(
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "audio": {"input": {"transcription": {"model": "gpt-4o-mini-transcribe"}}},
                },
            }
        )
        await client.until("session.updated")
        await client.audio_turn()
        committed = await client.until("conversation.item.input_audio_transcription.completed")
        assert committed[-1]["transcript"] == "what time is it"
        await client.send({"type": "response.create"})
        answer = await client.until("response.done")
        without_words = [e for e in answer if e["type"] != WORD]
        assert types(without_words) == [
            "response.created",
            "response.output_item.added",
            "conversation.item.added",
            "response.content_part.added",
            "response.output_audio.delta",
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "conversation.item.done",
            "response.output_item.added",
            "conversation.item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "conversation.item.done",
            "response.done",
        ]
        kinds = [e["type"] for e in answer]
        words = [i for i, kind in enumerate(kinds) if kind == WORD]
        audio = [i for i, kind in enumerate(kinds) if kind == "response.output_audio.delta"]
        assert audio[0] < words[0] and words[-1] < kinds.index("response.output_audio.done")
        assert "".join(answer[i]["delta"] for i in words) == "Let me look."
        pcm = b"".join(base64.b64decode(answer[i]["delta"]) for i in audio)
        assert pcm == tone_speech("Let me look.")
        done = answer[-1]["response"]
        assert done["status"] == "completed"
        assert [o["type"] for o in done["output"]] == ["message", "function_call"]
        call = done["output"][1]
        assert (call["name"], call["arguments"]) == ("get_current_time", "{}")
        await client.send(
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "function_call_output",
                    "call_id": call["call_id"],
                    "output": "{}",
                },
            }
        )
        await client.send({"type": "response.create"})
        follow_up = await client.until("response.done")
        transcript = [e for e in follow_up if e["type"] == "response.output_audio_transcript.done"]
        assert transcript[0]["transcript"] == "Ten past three."
        assert server.violations == []
        assert server.record.tool_outputs == {call["call_id"]: "{}"}


async def test_a_response_before_the_tool_output_is_a_violation() -> None:
    async with sim([TIME_TURN]) as server, raw_client(server) as client:
        await client.audio_turn()
        await client.send({"type": "response.create"})
        await client.until("response.done")
        await client.send({"type": "response.create"})
        await client.until("response.done")
        [violation] = server.violations
        assert violation.event == "response.create"
        assert "without function_call_output" in violation.problem


async def test_text_turns_are_answered_and_the_default_reply_says_it_is_a_simulator() -> None:
    turns = [{"hear": "ignored", "responses": [{"say": "Scripted answer."}]}]
    async with sim(turns) as server, raw_client(server) as client:
        answers = []
        for text in ("what time is it", "and now?"):
            await client.send(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": text}],
                    },
                }
            )
            await client.send({"type": "response.create"})
            answers.append(await client.until("response.done"))
        said = [
            e["transcript"]
            for answer in answers
            for e in answer
            if e["type"] == "response.output_audio_transcript.done"
        ]
        assert said == ["Scripted answer.", DEFAULT_REPLY]
        assert server.record.user_texts == ["what time is it", "and now?"]


async def test_cancel_without_a_response_is_an_error_and_with_one_ends_it_cancelled() -> None:
    async with sim([LONG_TONE], speed=4.0) as server, raw_client(server) as client:
        await client.send({"type": "response.cancel", "event_id": "evt_c"})
        [error] = await client.until("error")
        assert error["error"]["code"] == "response_cancel_not_active"
        await client.audio_turn()
        await client.send({"type": "response.create"})
        await client.until("response.output_audio.delta")
        await client.send({"type": "response.cancel"})
        rest = await client.until("response.done")
        done = rest[-1]["response"]
        assert done["status"] == "cancelled"
        assert done["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
        assert done["output"][0]["status"] == "incomplete"
        deltas = [e for e in client.events if e["type"] == "response.output_audio.delta"]
        assert len(deltas) < 4000 // 40  # cut well before the end of the 4 s tone
        await asyncio.sleep(0.05)
        assert server.violations == []


async def test_a_second_response_while_one_runs_is_refused() -> None:
    async with sim([LONG_TONE], speed=4.0) as server, raw_client(server) as client:
        await client.audio_turn()
        await client.send({"type": "response.create"})
        await client.until("response.created")
        await client.send({"type": "response.create", "event_id": "evt_2"})
        [error] = [e for e in await client.until("error") if e["type"] == "error"]
        assert error["error"]["code"] == "conversation_already_has_active_response"
        assert error["error"]["event_id"] == "evt_2"
        # an out-of-band response may run beside it
        await client.send({"type": "response.create", "response": {"conversation": "none"}})
        created = [e for e in await client.until("response.created")]
        assert created[-1]["response"]["conversation_id"] is None
        assert server.violations == []


async def test_truncate_is_confirmed_recorded_and_checked_against_the_audio_sent() -> None:
    async with sim([LONG_TONE], speed=4.0) as server, raw_client(server) as client:
        await client.audio_turn()
        await client.send({"type": "response.create"})
        [*_, delta] = await client.until("response.output_audio.delta")
        item_id = delta["item_id"]
        await client.send({"type": "response.cancel"})
        await client.until("response.done")
        truncate = {"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0}
        await client.send({**truncate, "audio_end_ms": 20})
        [*_, truncated] = await client.until("conversation.item.truncated")
        assert (truncated["item_id"], truncated["audio_end_ms"]) == (item_id, 20)
        await client.send({**truncate, "audio_end_ms": 60_000})
        [*_, too_far] = await client.until("error")
        assert too_far["error"]["code"] == "invalid_value"
        await client.send({**truncate, "item_id": "item_nope", "audio_end_ms": 0})
        [*_, missing] = await client.until("error")
        assert missing["error"]["code"] == "item_not_found"
        first, second = server.truncations
        assert (first.item_id, first.audio_end_ms) == (item_id, 20)
        assert first.audio_sent_ms >= 40
        assert second.audio_end_ms == 60_000


async def test_scripted_errors_failures_and_drops() -> None:
    turns = [
        {
            "hear": "a",
            "responses": [
                {"error": {"code": "server_error", "message": "Boom.", "type": "server_error"}},
                {"say": "fails", "status": "failed"},
                {"say": "dropped", "tone_hz": 440, "duration_ms": 2000, "drop_after_deltas": 3},
            ],
        }
    ]
    async with sim(turns) as server, raw_client(server) as client:
        await client.audio_turn()
        await client.send({"type": "response.create"})
        [*before, error] = await client.until("error")
        assert error["error"] == {
            "type": "server_error",
            "code": "server_error",
            "message": "Boom.",
            "param": None,
            "event_id": None,
        }
        assert "response.created" not in types(before)
        await client.send({"type": "response.create"})
        [*_, failed] = await client.until("response.done")
        assert failed["response"]["status"] == "failed"
        await client.send({"type": "response.create"})
        with pytest.raises(ConnectionClosedError):
            await client.until("response.done")
        deltas = [e for e in client.events if e["type"] == "response.output_audio.delta"]
        one_word_deltas = len(tone_speech("fails")) // (40 * BYTES_PER_MS)
        assert len(deltas) == one_word_deltas + 3


async def test_drop_connections_cuts_every_client() -> None:
    async with sim() as server, raw_client(server) as first, raw_client(server) as second:
        assert server.connection_count == 2
        await server.drop_connections()
        for client in (first, second):
            with pytest.raises(ConnectionClosedError):
                await client.recv()
        assert server.open_connections == 0


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/v1/realtime?model=gpt-realtime", {"Authorization": "Bearer sk-wrong"}, 401),
        ("/v1/realtime?model=gpt-realtime", {}, 401),
        ("/v1/realtime", {"Authorization": "Bearer sk-right"}, 400),
        ("/v1/chat?model=gpt-realtime", {"Authorization": "Bearer sk-right"}, 404),
    ],
)
async def test_handshakes_are_checked(path: str, headers: dict[str, str], status: int) -> None:
    async with sim(api_key="sk-right") as server:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(
                server.base_url.removesuffix("/v1") + path, additional_headers=headers, proxy=None
            ):
                pass
        assert refused.value.response.status_code == status
        assert server.handshakes[-1].status == status
        assert server.connection_count == 0


async def test_a_beta_client_header_is_a_violation() -> None:
    async with sim() as server:
        url = server.url + "?model=gpt-realtime"
        async with connect(
            url, additional_headers={"OpenAI-Beta": "realtime=v1"}, proxy=None
        ) as ws:
            assert json.loads(await ws.recv())["type"] == "session.created"
        assert [v.event for v in server.violations] == ["handshake"]
