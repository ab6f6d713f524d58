"""The sans-I/O Gemini Live core: feed it server messages, read the client messages.

Every client message is checked by the simulator's validator (against
``google.genai.types.LiveClientMessage`` when google-genai is installed),
and every server message fed in by ``validate_gemini_server_message``.
"""

from __future__ import annotations

import base64
import json

import pytest

from huxleyd.providers.base import InterruptAcceptance, RealtimeCore
from huxleyd.providers.events import (
    AudioChunk,
    Interrupted,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    Role,
    SessionReady,
    ToolCall,
    TranscriptDelta,
    TranscriptDone,
)
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.xai_core import CANCELLED_OUTPUT
from huxleyd.sim.gemini_validate import (
    validate_gemini_client_message,
)
from tests.providers.gemini_frames import (
    TOOLS,
    audio,
    content,
    labels,
    ready_core,
    sent,
    server,
    wanted,
)

MS_100 = bytes(3200)
"""100 ms of 16 kHz PCM16 silence."""


def test_capabilities() -> None:
    core = GeminiLiveCore()
    assert isinstance(core, RealtimeCore)
    caps = core.capabilities
    assert (caps.input_rate_hz, caps.output_rate_hz) == (16_000, 24_000)
    assert not (caps.response_cancel or caps.truncate)
    assert not (caps.mid_session_instructions or caps.mid_session_tools)
    assert caps.interrupt_acceptance is InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION


def test_the_setup_comes_first_and_setup_complete_means_ready() -> None:
    core = GeminiLiveCore(model="gemini-live-2.5-flash-preview")
    core.connection_opened()
    assert sent(core) == []  # nothing to set up yet: the setup must be the first message
    core.configure(instructions="Be brief.", tools=TOOLS, voice="Puck")
    [(label, setup)] = sent(core)
    assert label == "setup"
    assert setup["model"] == "models/gemini-live-2.5-flash-preview"
    assert setup["generationConfig"]["responseModalities"] == ["AUDIO"]
    voice = setup["generationConfig"]["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]
    assert voice == {"voiceName": "Puck"}
    assert setup["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    [declaration] = setup["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "set_volume"
    assert declaration["parametersJsonSchema"]["required"] == ["level"]
    assert setup["realtimeInputConfig"] == {"automaticActivityDetection": {"disabled": True}}
    assert setup["sessionResumption"] == {}
    assert "inputAudioTranscription" in setup and "outputAudioTranscription" in setup
    core.receive(server({"setupComplete": {"sessionId": "s1"}}))
    assert core.events_received() == [SessionReady("s1")]


def test_a_press_brackets_the_audio_with_activity_start_and_end() -> None:
    core = ready_core()
    core.start_turn()
    core.append_audio(MS_100)
    assert sent(core) == []  # held back until the turn is long enough to keep
    core.append_audio(MS_100)
    out = sent(core)
    assert labels(out) == ["realtimeInput.activityStart", "realtimeInput.audio"]
    assert out[1][1]["audio"]["mimeType"] == "audio/pcm;rate=16000"
    assert base64.b64decode(out[1][1]["audio"]["data"]) == MS_100 * 2
    core.append_audio(MS_100)
    core.end_turn()
    core.request_response()  # the model answers an ended activity by itself
    assert labels(sent(core)) == ["realtimeInput.audio", "realtimeInput.activityEnd"]
    assert core.response_active


def test_a_press_too_short_to_keep_never_reaches_the_provider() -> None:
    core = ready_core()
    core.start_turn()
    core.append_audio(MS_100)
    core.start_turn()  # the coordinator's "too short": clear what was sent
    assert sent(core) == []
    core.end_turn()
    [error] = core.events_received()
    assert isinstance(error, ProviderErrorEvent) and error.recoverable
    assert error.code == "input_audio_buffer_commit_empty"


def test_model_audio_transcripts_and_turn_complete_make_one_response() -> None:
    core = ready_core()
    pcm = b"\x02\x00" * 2400
    core.receive(content(inputTranscription={"text": "what time is it", "finished": True}))
    core.receive(audio(pcm))
    core.receive(content(outputTranscription={"text": "It is"}))
    core.receive(json.dumps({"server_content": {"turn_complete": True}}))  # snake_case, text frame
    events = core.events_received()
    rid = "gemini-1-1"
    assert events == [
        TranscriptDelta(Role.USER, "gemini-user-1", "what time is it"),
        TranscriptDone(Role.USER, "gemini-user-1", "what time is it"),
        ResponseStarted(rid),
        AudioChunk(rid, rid, pcm),
        TranscriptDelta(Role.ASSISTANT, rid, "It is"),
        TranscriptDone(Role.ASSISTANT, rid, "It is"),  # Gemini sends none: the core does
        ResponseDone(rid, ResponseStatus.COMPLETED, (), True, None),
    ]
    core.receive(audio(pcm))
    assert core.events_received()[0] == ResponseStarted("gemini-1-2")  # a stable new id


def test_a_tool_call_ends_its_response_and_the_output_goes_back() -> None:
    core = ready_core()
    call = {"id": "fc1", "name": "set_volume", "args": {"level": 30}}
    core.receive(server({"toolCall": {"functionCalls": [call]}}))
    tool_call = ToolCall("gemini-1-1", "fc1", "set_volume", '{"level":30}')
    assert core.events_received() == [
        ResponseStarted("gemini-1-1"),
        tool_call,
        ResponseDone("gemini-1-1", ResponseStatus.COMPLETED, (tool_call,)),
    ]
    assert core.pending_tool_calls == {"fc1"}
    core.send_tool_output("fc1", '{"level": 30}')
    core.request_response()  # the model goes on after the toolResponse by itself
    [(label, body)] = sent(core)
    assert label == "toolResponse"
    assert body["functionResponses"] == [
        {"id": "fc1", "name": "set_volume", "response": {"level": 30}}
    ]
    core.receive(content(turnComplete=True))  # the end of the turn that made the call
    assert core.events_received() == []
    core.receive(audio(b"\x00\x00"))
    assert core.events_received()[0] == ResponseStarted("gemini-1-2")


def test_a_non_object_tool_output_is_wrapped() -> None:
    core = ready_core()
    core.receive(server({"toolCall": {"functionCalls": [{"id": "a", "name": "set_volume"}]}}))
    core.send_tool_output("a", "plain words")
    [(_, body)] = sent(core)
    assert body["functionResponses"][0]["response"] == {"output": "plain words"}


def test_a_cancelled_call_gets_no_tool_response() -> None:
    core = ready_core()
    core.receive(server({"toolCall": {"functionCalls": [{"id": "a", "name": "set_volume"}]}}))
    core.receive(server({"toolCallCancellation": {"ids": ["a"]}}))
    assert core.pending_tool_calls == frozenset()
    core.send_tool_output("a", '{"cancelled": true}')
    assert sent(core) == []


def test_barge_in_supersedes_the_open_turn_and_interrupted_confirms_it() -> None:
    core = ready_core()
    core.receive(audio(b"\x01\x00" * 100))
    core.events_received()
    core.start_turn()
    core.append_audio(MS_100 * 3)
    assert labels(sent(core))[0] == "realtimeInput.activityStart"
    core.receive(audio(b"\x01\x00" * 100))  # in flight before the server saw activityStart
    core.receive(content(interrupted=True))
    assert core.events_received() == [
        ResponseDone("gemini-1-1", ResponseStatus.CANCELLED, (), True, "interrupted")
    ]
    assert core.dropped_audio_chunks == 1


def test_an_interruption_we_did_not_ask_for_is_reported() -> None:
    core = ready_core()
    core.receive(audio(b"\x01\x00" * 100))
    core.events_received()
    core.receive(content(interrupted=True))
    events = core.events_received()
    assert events[0] == Interrupted("gemini-1-1")
    assert isinstance(events[1], ResponseDone) and events[1].status is ResponseStatus.CANCELLED


def test_calls_of_a_superseded_turn_are_answered_here() -> None:
    core = ready_core()
    core.receive(audio(b"\x01\x00" * 100))
    core.events_received()
    core.cancel_response()
    core.receive(server({"toolCall": {"functionCalls": [{"id": "x", "name": "set_volume"}]}}))
    assert [type(e) for e in core.events_received()] == [ResponseDone]
    [(label, body)] = sent(core)
    assert label == "toolResponse"
    assert body["functionResponses"][0]["response"] == json.loads(CANCELLED_OUTPUT)


def test_text_turns_and_instruction_overrides_go_as_client_content() -> None:
    core = ready_core()
    core.send_user_text("what time is it")
    assert sent(core) == []  # not before the response is asked for
    core.request_response()
    [(label, body)] = sent(core)
    assert label == "clientContent"
    assert body == {
        "turnComplete": True,
        "turns": [{"role": "user", "parts": [{"text": "what time is it"}]}],
    }
    core.request_response(instructions="Be brief.\n\nSay the song ended.")
    [(_, body)] = sent(core)
    assert body["turns"][0]["parts"] == [{"text": "Say the song ended."}]
    core.request_response()  # a retry: nothing new, the turn is simply complete
    assert sent(core) == [("clientContent", {"turnComplete": True})]


def test_an_empty_answer_is_reported_so_the_coordinator_can_retry() -> None:
    core = ready_core()
    core.send_user_text("hm")
    core.request_response()
    core.receive(content(turnComplete=True))
    [started, done] = core.events_received()
    assert isinstance(started, ResponseStarted)
    assert done == ResponseDone(started.response_id, ResponseStatus.COMPLETED, (), False)
    core.receive(content(turnComplete=True))  # not requested: nothing
    assert core.events_received() == []


def test_go_away_asks_to_reconnect_once_idle_and_the_setup_resumes() -> None:
    core = ready_core()
    core.receive(server({"sessionResumptionUpdate": {"newHandle": "h1", "resumable": True}}))
    core.receive(server({"sessionResumptionUpdate": {"newHandle": "h2", "resumable": False}}))
    assert core.resumption_handle == "h1"
    core.receive(audio(b"\x01\x00" * 10))
    core.receive(server({"goAway": {"timeLeft": "10s"}}))
    assert wanted(core) is None  # the model is talking
    core.receive(content(turnComplete=True))
    assert wanted(core) == "go_away"
    core.connection_lost()
    core.connection_opened()
    assert wanted(core) is None
    [(label, setup)] = sent(core)
    assert label == "setup" and setup["sessionResumption"] == {"handle": "h1"}
    assert core.resumed_connections == 1


def test_a_new_configuration_waits_for_a_resumed_reconnect() -> None:
    core = ready_core()
    core.receive(server({"sessionResumptionUpdate": {"newHandle": "h1", "resumable": True}}))
    core.start_turn()
    core.configure(instructions="Be very brief.", tools=TOOLS, voice="Puck")
    assert sent(core) == [] and wanted(core) is None  # the user holds the button
    core.start_turn()
    core.end_turn()  # nothing held: an error event, and the turn is over
    assert wanted(core) == "configuration_changed"
    core.connection_lost()
    core.connection_opened()
    [(_, setup)] = sent(core)
    assert setup["systemInstruction"]["parts"][0]["text"] == "Be very brief."
    assert setup["sessionResumption"] == {"handle": "h1"}


def test_errors_come_as_close_codes() -> None:
    core = ready_core()
    core.receive(audio(b"\x01\x00" * 10))
    core.events_received()
    core.connection_closed(1011, "Internal error encountered.")
    core.connection_lost()
    assert core.events_received() == [
        ResponseDone(
            "gemini-1-1",
            ResponseStatus.FAILED,
            (),
            True,
            "internal_error: Internal error encountered.",
        )
    ]
    core.connection_opened()
    core.connection_closed(1007, "Request contains an invalid argument.")
    core.connection_lost()
    [error] = core.events_received()
    assert error == ProviderErrorEvent(
        "invalid_argument", "Request contains an invalid argument.", recoverable=False
    )
    core.connection_opened()
    core.connection_closed(1006, "")  # a network drop, not a provider error
    core.connection_lost()
    assert core.events_received() == []


def test_bad_frames_are_reported_not_raised() -> None:
    core = ready_core()
    core.receive(b"\xff\xfe")
    core.receive(json.dumps({"serverContent": {"modelTurn": {"parts": [{"inlineData": {}}]}}}))
    core.receive(json.dumps({"serverContent": "nope"}))
    codes = [e.code for e in core.events_received() if isinstance(e, ProviderErrorEvent)]
    assert codes == ["protocol_error"] * 3
    core.receive(json.dumps({"usageMetadata": {"totalTokenCount": 3}}))
    assert core.events_received() == []


@pytest.mark.parametrize("pcm", [b"\x00", b"\x00\x00\x00"])
def test_odd_byte_counts_are_refused(pcm: bytes) -> None:
    with pytest.raises(ValueError, match="even"):
        ready_core().append_audio(pcm)


def test_setup_turns_on_the_sliding_window_with_the_configured_trigger() -> None:
    # Issue 14 item 2: without contextWindowCompression an audio session ends at 15 min.
    from huxleyd.providers.factory import create_core
    from huxleyd.providers.settings import ProviderSettings

    for trigger, expected in (
        (0, {"slidingWindow": {}}),
        (25_600, {"slidingWindow": {}, "triggerTokens": 25_600}),
    ):
        settings = ProviderSettings(kind="gemini", context_compression_trigger_tokens=trigger)
        core = create_core(settings)
        core.configure(instructions="x", tools=[], voice="Puck")
        core.connection_opened()
        [setup] = core.messages_to_send()
        validate_gemini_client_message(setup)
        assert json.loads(setup)["setup"]["contextWindowCompression"] == expected


def test_gemini_keepalive_tolerates_pongs_of_up_to_30_s() -> None:
    # Issue 14 item 6: pongs measured at 8-30 s; the connection must wait longer.
    from huxleyd.providers.factory import create_connection
    from huxleyd.providers.settings import ProviderSettings
    from huxleyd.providers.transport import ProviderConnection

    conn = create_connection(ProviderSettings(kind="gemini"), api_key=None, on_event=lambda e: None)
    assert isinstance(conn, ProviderConnection)
    assert conn.limits.ping_timeout_s > 30.0
    openai = create_connection(
        ProviderSettings(kind="openai"), api_key=None, on_event=lambda e: None
    )
    assert isinstance(openai, ProviderConnection)
    assert openai.limits.ping_timeout_s == 30.0
