"""What the cascade keeps per response: its ``ResponseDone`` carries the calls
and audio it made, and a too-short commit is refused as OpenAI refuses it."""

from __future__ import annotations

from huxleyd.providers.cascade.records import (
    MIN_COMMIT_MS,
    Item,
    Response,
    StageFailed,
    commit_empty,
)
from huxleyd.providers.events import ResponseDone, ResponseStatus, ToolCall
from huxleyd.sim import session as openai_sim


def test_done_reports_the_calls_audio_and_band_of_the_run() -> None:
    response = Response("resp_1", out_of_band=True, instructions=None)
    call = ToolCall("resp_1", "call_1", "get_time", "{}")
    response.calls.append(call)
    response.had_audio = True
    done = response.done(ResponseStatus.FAILED, reason="llm_unreachable")
    assert done == ResponseDone(
        "resp_1",
        ResponseStatus.FAILED,
        tool_calls=(call,),
        had_audio=True,
        reason="llm_unreachable",
        out_of_band=True,
    )
    response.calls.append(call)
    assert done.tool_calls == (call,)  # a snapshot, not the live list


def test_each_reply_has_its_own_spoken_log() -> None:
    first, second = Item("item_1"), Item("item_2")
    first.log.add("Hola.", 300.0)
    assert second.log.pieces == [] and not second.truncated


def test_a_too_short_commit_is_openais_recoverable_error() -> None:
    assert MIN_COMMIT_MS == openai_sim.MIN_COMMIT_MS  # the same bar as the server the sim mimics
    short = commit_empty(40.4)
    assert short.code == "input_audio_buffer_commit_empty"  # what the turn layer calls too short
    assert short.recoverable
    assert short.message == "buffer too small: expected at least 100 ms of audio, got 40 ms"
    assert commit_empty(None).message == "nothing was heard in the recording"


def test_a_stage_failure_carries_its_reason_apart_from_its_detail() -> None:
    failed = StageFailed("asr_unreachable", "connection refused", unreachable=True)
    assert (failed.reason, str(failed), failed.unreachable) == (
        "asr_unreachable",
        "connection refused",
        True,
    )
    assert not StageFailed("tts_failed", "x").unreachable
