"""The cascade provider end to end against the cascade simulator.

Real stages on loopback: the official openai client to the sim's
transcription and chat endpoints, a websocket to its ElevenLabs stream-input.
The assertions are the coordinator's contract (the events and their order)
and what the sim saw (requests, text to read, streams closed early).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from huxleyd.pcm import RATE_HZ
from huxleyd.providers.cascade.llm import ChatModel, NativeCall, TextDelta
from huxleyd.providers.cascade.provider import UNPROMPTED, CascadeConnection
from huxleyd.providers.events import (
    AudioChunk,
    InputCommitted,
    ItemTruncated,
    ProviderErrorEvent,
    ResponseStarted,
    ResponseStatus,
    Role,
    TranscriptDone,
)
from huxleyd.sim.chat import CascadeSim, cascade_script_from_dict
from tests.fakes.provider_callbacks import Recorder
from tests.providers.cascade.harness import FIRST, STORY, TIME_TURN, VOLUME_TOOL, cascade, press


async def test_a_push_to_talk_turn_with_a_code_prompt_tool_call() -> None:
    async with cascade(TIME_TURN) as (conn, rec, sim):
        press(conn)
        await rec.wait_until(lambda: len(rec.done()) == 1)
        # The call is reported as soon as the model's text is complete, so the
        # tool runs while the lead sentence still plays; the audio sits between
        # ResponseStarted and ResponseDone.
        names = rec.names()
        assert [n for n in names if n != "AudioChunk"] == [
            "SessionReady",
            "InputCommitted",
            "TranscriptDone",
            "ResponseStarted",
            "TranscriptDelta",
            "ToolCall",
            "TranscriptDone",
            "ResponseDone",
        ]
        assert names.index("ResponseStarted") < names.index("AudioChunk")
        assert names.index("AudioChunk") < names.index("ResponseDone")
        heard = rec.of(TranscriptDone)[0]
        assert (heard.role, heard.text) == (Role.USER, "what time is it")
        assert heard.item_id == rec.of(InputCommitted)[0].item_id
        first = rec.done()[0]
        (call,) = rec.calls()
        assert (call.name, json.loads(call.arguments_json)) == ("get_current_time", {})
        assert first.status is ResponseStatus.COMPLETED and first.had_audio
        assert first.tool_calls == (call,) and call.response_id == first.response_id

        conn.send_tool_output(call.call_id, '{"time": "15:10"}')
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 2)
        second = rec.done()[1]
        assert second.status is ResponseStatus.COMPLETED and second.tool_calls == ()
        assert rec.audio(second.response_id)

        # The recogniser got the press as a 24 kHz WAV.
        (asr,) = sim.chat.transcriptions
        assert (asr.rate_hz, asr.duration_ms) == (RATE_HZ, 500)
        # The model saw the tools as Python stubs, then its call and the result.
        ask, follow = sim.chat.requests
        system = ask.messages[0]["content"]
        assert ask.messages[0]["role"] == "system" and "Be brief." in system
        assert "def get_current_time():" in system and "def set_volume(level: int):" in system
        assert ask.tools is None and ask.stream
        assert follow.messages[1:] == [
            {"role": "user", "content": "what time is it"},
            {
                "role": "assistant",
                "content": "Let me look at the clock. <code>get_current_time()</code>",
            },
            {
                "role": "user",
                "content": '[tool result] get_current_time() returned:\n{"time": "15:10"}',
            },
        ]
        # Only speech reached the TTS, never the code; all its audio was reported.
        assert [s.text for s in sim.tts.sessions] == [
            "Let me look at the clock.",
            "It is ten past three.",
        ]
        assert sum(s.audio_bytes for s in sim.tts.sessions) == len(rec.audio())
        assert all(s.final_sent and not s.closed_early for s in sim.tts.sessions)
        assert sim.violations == []


async def test_native_tool_calls_when_the_endpoint_has_them() -> None:
    script = cascade_script_from_dict(
        {
            "turns": [
                {
                    "hear": "quieter please",
                    "replies": [
                        {"tool_calls": [{"name": "set_volume", "arguments": {"level": 30}}]},
                        {"text": "Done."},
                    ],
                }
            ]
        }
    )
    async with cascade(script, native_tools=True) as (conn, rec, sim):
        press(conn)
        await rec.wait_until(lambda: len(rec.done()) == 1)
        (call,) = rec.calls()
        assert (call.name, json.loads(call.arguments_json)) == ("set_volume", {"level": 30})
        assert rec.done()[0].had_audio is False  # a call without words is silent
        conn.send_tool_output(call.call_id, '{"volume": 30}')
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 2)
        ask, follow = sim.chat.requests
        assert ask.tools is not None
        assert [t["function"]["name"] for t in ask.tools] == ["get_current_time", "set_volume"]
        assert ask.tools[1]["function"]["parameters"] == VOLUME_TOOL["parameters"]
        assert "def set_volume" not in ask.messages[0]["content"]
        assert follow.messages[2]["tool_calls"][0]["id"] == call.call_id
        assert follow.messages[3] == {
            "role": "tool",
            "tool_call_id": call.call_id,
            "content": '{"volume": 30}',
        }
        assert [s.text for s in sim.tts.sessions] == ["Done."]  # a wordless call opened none
        assert sim.violations == []


async def test_a_refused_call_goes_back_to_the_model_and_is_never_reported() -> None:
    script = cascade_script_from_dict(
        {
            "turns": [
                {
                    "hear": "turn it down to thirty",
                    "replies": [
                        {"text": "Sure. <code>set_volume(30)</code>"},
                        {"text": "Once more. <code>set_volume(level=30)</code>"},
                    ],
                }
            ]
        }
    )
    async with cascade(script) as (conn, rec, sim):
        press(conn)
        await rec.wait_until(lambda: len(rec.done()) == 1)
        (call,) = rec.calls()  # only the valid one
        assert json.loads(call.arguments_json) == {"level": 30}
        assert len(sim.chat.requests) == 2
        note = sim.chat.requests[1].messages[-1]
        assert note["role"] == "user"
        assert note["content"].startswith("Tool call error (nothing was run for these):")
        assert "by position" in note["content"]
        # Both replies were spoken, each as its own item, in one response.
        assert [s.text for s in sim.tts.sessions] == ["Sure.", "Once more."]
        items = {c.item_id for c in rec.of(AudioChunk)}
        assert len(items) == 2 and len(rec.of(ResponseStarted)) == 1


async def test_when_repairs_run_out_the_response_ends_without_a_call() -> None:
    script = cascade_script_from_dict(
        {"turns": [{"hear": "x", "replies": [{"text": "<code>launch(rocket=True)</code>"}]}]}
    )
    async with cascade(script, max_repairs=0) as (conn, rec, _sim):
        press(conn)
        await rec.wait_until(lambda: len(rec.done()) == 1)
        done = rec.done()[0]
        assert (done.status, done.tool_calls, done.had_audio) == (
            ResponseStatus.COMPLETED,
            (),
            False,
        )
        assert conn.history.messages[-1]["content"].startswith("Tool call error")
        assert "no tool named 'launch'" in conn.history.messages[-1]["content"]


async def test_an_extra_call_is_refused_and_noted_with_the_first_ones_result() -> None:
    script = cascade_script_from_dict(
        {
            "turns": [
                {
                    "hear": "x",
                    "replies": [
                        {"text": "<code>get_current_time()</code><code>set_volume(level=5)</code>"},
                        {"text": "Ok."},
                    ],
                }
            ]
        }
    )
    async with cascade(script) as (conn, rec, sim):
        press(conn)
        await rec.wait_until(lambda: len(rec.done()) == 1)
        (call,) = rec.calls()
        assert call.name == "get_current_time"
        conn.send_tool_output(call.call_id, "{}")
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 2)
        result = sim.chat.requests[1].messages[-1]["content"]
        assert result.startswith("[tool result] get_current_time() returned:\n{}")
        assert "`set_volume(level=5)` was not run" in result


async def test_nothing_heard_is_reported_like_an_empty_commit() -> None:
    script = cascade_script_from_dict({"turns": [{"hear": ""}]})
    async with cascade(script) as (conn, rec, sim):
        press(conn)
        await rec.wait_until(lambda: bool(rec.of(ProviderErrorEvent)))
        (error,) = rec.of(ProviderErrorEvent)
        assert error.code == "input_audio_buffer_commit_empty" and error.recoverable
        assert rec.of(ResponseStarted) == [] and sim.chat.requests == []


async def test_a_too_short_press_is_refused_without_asking_the_recogniser() -> None:
    async with cascade(TIME_TURN) as (conn, rec, sim):
        conn.start_turn()
        conn.append_audio(bytes(2 * 24 * 50))  # 50 ms
        conn.end_turn()
        await rec.wait_until(lambda: bool(rec.of(ProviderErrorEvent)))
        assert rec.of(ProviderErrorEvent)[0].code == "input_audio_buffer_commit_empty"
        assert rec.of(InputCommitted) == [] and sim.chat.transcriptions == []


async def test_a_text_turn_needs_no_recogniser() -> None:
    async with cascade(TIME_TURN) as (conn, rec, sim):
        conn.send_user_text("what time is it")
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 1)
        assert sim.chat.transcriptions == []
        assert sim.chat.requests[0].messages[1] == {"role": "user", "content": "what time is it"}
        assert len(rec.calls()) == 1


async def test_a_second_request_while_one_runs_is_refused() -> None:
    script = cascade_script_from_dict(
        {"turns": [{"replies": [{"text": "Hello there. Hi.", "stall_after_chunks": 1}]}]}
    )
    async with cascade(script) as (conn, rec, sim):
        conn.send_user_text("hi")
        conn.request_response()
        conn.request_response()
        await rec.wait_until(lambda: bool(rec.of(ProviderErrorEvent)))
        assert rec.of(ProviderErrorEvent)[0].code == "conversation_already_has_active_response"
        sim.release()
        await rec.wait_until(lambda: len(rec.done()) == 1)
        assert len(sim.chat.requests) == 1


async def test_an_llm_error_fails_the_response() -> None:
    script = cascade_script_from_dict(
        {"turns": [{"replies": [{"error_status": 503, "error_message": "overloaded"}]}]}
    )
    async with cascade(script) as (conn, rec, _sim):
        conn.send_user_text("hi")
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 1)
        done = rec.done()[0]
        assert (done.status, done.reason) == (ResponseStatus.FAILED, "http_503")


class Unplugged(ChatModel):
    """The real chat model, or, while ``down``, the same client aimed at a closed port."""

    def __init__(self, model: ChatModel) -> None:
        super().__init__(model.client, model=model.model)
        self._dead = ChatModel(
            model.client.with_options(base_url="http://127.0.0.1:9/v1"), model=model.model
        )
        self.down = False

    async def stream(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> AsyncGenerator[TextDelta | NativeCall, None]:
        source = self._dead.stream if self.down else super().stream
        async for piece in source(messages, tools):
            yield piece


async def test_an_unreachable_model_counts_as_offline_and_recovers() -> None:
    plugs: list[Unplugged] = []

    def unplugged(model: ChatModel) -> ChatModel:
        plugs.append(Unplugged(model))
        return plugs[0]

    async with cascade(TIME_TURN, llm=unplugged) as (conn, rec, _sim):
        plugs[0].down = True
        for attempt in range(4):
            conn.send_user_text("hi")
            conn.request_response()
            await rec.wait_until(lambda: len(rec.done()) == attempt + 1)  # noqa: B023 - awaited here
            assert rec.done()[-1].reason == "connection_failed"
        assert rec.state_names()[-4:] == ["reconnecting", "reconnecting", "reconnecting", "offline"]
        assert conn.connected  # requests are still attempted, nothing is dropped
        plugs[0].down = False
        conn.send_user_text("what time is it")
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 5)
        assert rec.done()[-1].status is ResponseStatus.COMPLETED
        assert rec.state_names()[-1] == "connected"


# ---------------------------------------------------------------- barge-in


async def story_until_first_sentence_voiced(
    conn: CascadeConnection, rec: Recorder, sim: CascadeSim
) -> tuple[str, int]:
    """Press, and wait until the first sentence was voiced while the model still "generates"."""
    press(conn)
    await sim.wait_until(lambda: bool(sim.tts.sessions) and sim.tts.sessions[0].batches_done == 1)
    session = sim.tts.sessions[0]
    await rec.wait_until(lambda: len(rec.audio()) == session.audio_bytes)
    return rec.of(AudioChunk)[0].item_id, len(rec.audio()) * 1000 // (2 * RATE_HZ)


async def test_barge_in_aborts_the_llm_and_the_tts_and_keeps_what_was_heard() -> None:
    async with cascade(STORY, speed=math.inf) as (conn, rec, sim):
        item_id, voiced_ms = await story_until_first_sentence_voiced(conn, rec, sim)
        assert sim.chat.requests[0].chunks_sent == 6  # the model is still "generating"
        before = len(rec.of(AudioChunk))

        assert conn.cancel_response() is True
        conn.truncate(item_id, voiced_ms)

        await sim.wait_until(lambda: sim.chat.requests[0].closed_early)
        await sim.wait_until(lambda: sim.tts.sessions[0].closed_early)
        await rec.wait_until(lambda: bool(rec.of(ItemTruncated)))
        assert not sim.chat.requests[0].completed
        assert not sim.tts.sessions[0].final_sent and not sim.tts.sessions[0].ended_by_client
        (done,) = rec.done()
        assert (done.status, done.reason) == (ResponseStatus.CANCELLED, "client_cancelled")
        assert len(rec.of(AudioChunk)) == before  # nothing reported after the cut
        assert rec.of(ItemTruncated) == [ItemTruncated(item_id, voiced_ms)]
        assert conn.history.messages == [
            {"role": "user", "content": "tell me a story"},
            {"role": "assistant", "content": FIRST},
        ]
        assert conn.cancel_response() is False  # nothing is running any more


async def test_a_cut_in_the_middle_of_a_sentence_keeps_whole_words_heard() -> None:
    async with cascade(STORY, speed=math.inf) as (conn, rec, sim):
        item_id, voiced_ms = await story_until_first_sentence_voiced(conn, rec, sim)
        conn.cancel_response()
        conn.truncate(item_id, voiced_ms // 2)
        (assistant,) = [m for m in conn.history.messages if m["role"] == "assistant"]
        heard = assistant["content"]
        assert FIRST.startswith(heard) and 0 < len(heard) < len(FIRST)
        assert FIRST[len(heard)] == " "  # whole words only


async def test_a_cut_before_truncate_keeps_only_voiced_text() -> None:
    async with cascade(STORY, speed=math.inf) as (conn, rec, sim):
        await story_until_first_sentence_voiced(conn, rec, sim)
        conn.cancel_response()
        assert conn.history.messages[-1] == {"role": "assistant", "content": FIRST}
        # The next turn carries the cut reply, not the text never spoken.
        conn.send_user_text("go on")
        sim.release()
        conn.request_response()
        await rec.wait_until(lambda: len(sim.chat.requests) == 2)
        assert sim.chat.requests[1].messages[-2:] == [
            {"role": "assistant", "content": FIRST},
            {"role": "user", "content": "go on"},
        ]


async def test_an_announcement_gets_a_user_turn_the_chat_template_needs() -> None:
    script = cascade_script_from_dict({"turns": [{"replies": [{"text": "Your tea is ready."}]}]})
    async with cascade(script) as (conn, rec, sim):
        conn.request_response(instructions="Be brief.\n\nTell the user the tea timer ended.")
        await rec.wait_until(lambda: len(rec.done()) == 1)
        (ask,) = sim.chat.requests
        assert ask.messages[0]["content"].startswith("Be brief.\n\nTell the user the tea timer")
        assert "def get_current_time():" in ask.messages[0]["content"]
        assert ask.messages[-1] == {"role": "user", "content": UNPROMPTED}
        assert conn.history.messages == [{"role": "assistant", "content": "Your tea is ready."}]
        assert rec.done()[0].had_audio


async def test_a_failed_transcription_fails_the_response_it_started() -> None:
    async with cascade(TIME_TURN, asr_model="no-such-model") as (conn, rec, sim):
        press(conn)
        await rec.wait_until(lambda: len(rec.done()) == 1)
        assert [type(e).__name__ for e in rec.events[-2:]] == ["ResponseStarted", "ResponseDone"]
        done = rec.done()[0]
        assert (done.status, done.reason) == (ResponseStatus.FAILED, "transcription_failed")
        assert done.response_id == rec.of(ResponseStarted)[0].response_id
        assert sim.chat.requests == []


async def test_a_local_tts_command_speaks_the_reply() -> None:
    script = cascade_script_from_dict({"turns": [{"replies": [{"text": "Hello. Goodbye."}]}]})
    tone = "import sys; sys.stdout.buffer.write(b'\\x00\\x10' * (240 * len(sys.stdin.read())))"
    async with cascade(
        script,
        tts="command",
        tts_command=(sys.executable, "-c", tone),
        tts_command_output="raw",
        tts_command_rate_hz=24_000,
        min_chunk_chars=0,
    ) as (conn, rec, sim):
        conn.send_user_text("hi")
        conn.request_response()
        await rec.wait_until(lambda: len(rec.done()) == 1)
        # One program run per sentence: 10 ms of audio per character of it.
        assert len(rec.audio()) == 2 * 240 * (len("Hello.") + len("Goodbye."))
        assert sim.tts.sessions == []
        assert rec.of(TranscriptDone)[-1].text == "Hello. Goodbye."


async def test_a_retry_while_recognising_keeps_the_users_words() -> None:
    script = cascade_script_from_dict(
        {"turns": [{"hear": "what time is it", "hear_delay_ms": 300, "replies": [{"text": "Ok."}]}]}
    )
    async with cascade(script, speed=1.0) as (conn, rec, sim):
        press(conn)
        await sim.wait_until(lambda: _asked_to_recognise(sim))
        # The coordinator's silence watchdog: cancel, then ask again.
        assert conn.cancel_response() is True
        conn.request_response()
        await rec.wait_until(lambda: any(d.status is ResponseStatus.COMPLETED for d in rec.done()))
        (ask,) = sim.chat.requests
        assert ask.messages[1:] == [{"role": "user", "content": "what time is it"}]
        assert len(sim.chat.transcriptions) == 1


async def test_a_new_turn_makes_an_unfinished_recognition_stale() -> None:
    script = cascade_script_from_dict(
        {
            "turns": [
                {"hear": "first", "hear_delay_ms": 300},
                {"hear": "second", "replies": [{"text": "Ok."}]},
            ]
        }
    )
    async with cascade(script, speed=1.0) as (conn, rec, sim):
        press(conn)
        await sim.wait_until(lambda: _asked_to_recognise(sim))
        conn.cancel_response()  # barge-in: cancel, then a new turn
        press(conn)
        await rec.wait_until(lambda: any(d.status is ResponseStatus.COMPLETED for d in rec.done()))
        (ask,) = sim.chat.requests
        assert ask.messages[1:] == [{"role": "user", "content": "second"}]


def _asked_to_recognise(sim: CascadeSim) -> bool:
    return sim.chat.transcription_requests > 0
