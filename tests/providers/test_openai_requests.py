"""Which request a response answers: known from what we sent, not from optional fields.

Issue 14 item 3 (out-of-band detection by our own marks) and issue 13 case 12
(a pre-start cancel bound to its create, not to the connection).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from huxleyd.providers.events import AudioChunk, ResponseDone, ResponseStarted
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.sim import wire
from tests.providers import frames
from tests.providers.frames import ready_core, sent

REQUEST_TAG_KEY = "huxleyd_request"  # openai_core.REQUEST_TAG_KEY
PCM = b"\x01\x00" * 240


def created(response_id: str, **body: Any) -> str:
    """A GA ``response.created`` with only the fields given (plus id, object, status)."""
    response = {"id": response_id, "object": "realtime.response", "status": "in_progress"}
    return frames.frame({"type": "response.created", "response": {**response, **body}})


def audio(response_id: str) -> str:
    delta = base64.b64encode(PCM).decode()
    return frames.frame(
        wire.content_event("response.output_audio.delta", response_id, "item_a", delta=delta)
    )


def tag_of(create: dict[str, Any]) -> str:
    tag = create["response"]["metadata"][REQUEST_TAG_KEY]
    assert isinstance(tag, str)
    return tag


def test_every_create_carries_our_tag_beside_the_callers_metadata() -> None:
    core = ready_core()
    core.request_response(metadata={"kind": "inject"})
    core.request_response(out_of_band=True)
    first, second = sent(core)
    assert first["response"]["metadata"]["kind"] == "inject"
    assert tag_of(first) != tag_of(second)


def test_a_reply_without_conversation_id_is_still_an_ordinary_reply() -> None:
    # Seen with an independent peer: response.created carries no conversation_id.
    core = ready_core()
    core.request_response()
    core.messages_to_send()
    core.receive(created("resp_1"))
    core.receive(audio("resp_1"))
    started, chunk = core.events_received()
    assert started == ResponseStarted("resp_1", out_of_band=False)
    assert chunk == AudioChunk("resp_1", "item_a", PCM)
    assert core.active_response_id == "resp_1"


def test_the_echoed_tag_says_which_request_started_even_out_of_order() -> None:
    core = ready_core()
    core.request_response(out_of_band=True, metadata={"kind": "announcement"})
    core.request_response()
    oob, ordinary = sent(core)
    # The in-conversation one starts first, without conversation_id either way.
    core.receive(created("resp_conv", metadata=ordinary["response"]["metadata"]))
    core.receive(created("resp_oob", metadata=oob["response"]["metadata"]))
    assert core.events_received() == [
        ResponseStarted("resp_conv", out_of_band=False),
        ResponseStarted("resp_oob", out_of_band=True),
    ]
    assert core.active_response_id == "resp_conv"


def test_without_an_echo_responses_answer_creates_in_order() -> None:
    core = ready_core()
    core.request_response(out_of_band=True)
    core.request_response()
    core.messages_to_send()
    core.receive(created("resp_1", conversation_id=None))
    core.receive(created("resp_2", conversation_id=None))
    assert core.events_received() == [
        ResponseStarted("resp_1", out_of_band=True),
        ResponseStarted("resp_2", out_of_band=False),
    ]


def test_a_refused_create_takes_its_pre_start_cancel_along() -> None:
    # Issue 13 case 12: cancel before response.created, the create is refused
    # (a reply was still active), then the next wanted reply must be heard.
    core = ready_core()
    core.request_response()
    [create] = sent(core)
    assert core.cancel_response() is True
    [cancel] = sent(core)
    assert cancel["type"] == "response.cancel"
    core.receive(
        frames.error("conversation_already_has_active_response", event_id=create["event_id"])
    )
    core.events_received()
    core.request_response()
    [again] = sent(core)
    body = {"conversation_id": "conv_1", "metadata": again["response"]["metadata"]}
    core.receive(created("resp_next", **body))
    core.receive(audio("resp_next"))
    events = core.events_received()
    assert ResponseStarted("resp_next") in events
    assert AudioChunk("resp_next", "item_a", PCM) in events
    assert core.dropped_audio_chunks == 0


def test_a_refused_create_without_event_id_also_takes_its_cancel_along() -> None:
    core = ready_core()
    core.request_response()
    core.messages_to_send()
    core.cancel_response()
    core.receive(frames.error("conversation_already_has_active_response"))
    core.request_response()
    core.messages_to_send()
    core.receive(created("resp_next", conversation_id="conv_1"))
    core.receive(audio("resp_next"))
    assert any(isinstance(e, AudioChunk) for e in core.events_received())


def test_the_pre_start_cancel_still_cuts_the_response_it_was_meant_for() -> None:
    core = ready_core()
    core.request_response()
    core.messages_to_send()
    core.cancel_response()
    core.receive(created("resp_1"))
    core.receive(audio("resp_1"))
    core.receive(frames.response_done("resp_1", status="cancelled"))
    events = core.events_received()
    assert not any(isinstance(e, AudioChunk) for e in events)
    assert isinstance(events[-1], ResponseDone)
    assert core.dropped_audio_chunks == 1


def test_a_response_nobody_requested_is_in_the_conversation() -> None:
    core = OpenAIRealtimeCore()
    core.connection_opened()
    core.receive(frames.session_created())
    core.events_received()
    core.receive(created("resp_vad"))
    assert core.events_received() == [ResponseStarted("resp_vad", out_of_band=False)]
    assert json.loads(frames.session_created())["type"] == "session.created"
