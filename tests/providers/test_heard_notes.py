"""Providers without truncate are told what the user heard of a cut reply (item 7).

xAI and Gemini keep the whole reply in their history; after a barge-in the
next user turn is preceded by a short context note with the heard share.
"""

from __future__ import annotations

import base64
import json

from huxleyd.logs import get_logger
from huxleyd.providers.core import CutReplyNotes, heard_note
from huxleyd.providers.events import ResponseStarted
from huxleyd.sim import wire
from tests.providers import frames
from tests.providers import gemini_frames as gemini
from tests.providers import xai_frames as xai

SECOND = bytes(24_000 * 2)  # one second of 24 kHz PCM16
SAID = "It is ten past three and the sun is out."


def test_the_note_estimates_the_heard_words_from_the_played_share() -> None:
    note = heard_note(500, SAID, 1000.0)
    assert "0.5 s" in note
    assert '"It is ten past three…"' in note
    assert "did not hear the rest" in note
    assert "heard only" not in heard_note(0, SAID, 1000.0)


def test_the_notes_of_cut_replies_keep_only_the_running_reply_and_hand_out_once() -> None:
    notes = CutReplyNotes(output_rate_hz=24_000, logger=get_logger("huxleyd.test"))
    notes.add_text("item_a", SAID)
    notes.add_audio("item_a", len(SECOND))
    notes.restart()  # a new reply runs: the last one can no longer be cut
    notes.cut("item_a", 500)
    assert "heard only" not in (notes.take() or "")
    notes.add_text("item_b", SAID)
    notes.add_audio("item_b", len(SECOND))
    notes.cut("item_b", 500)
    note = notes.take()
    assert note is not None and '"It is ten past three…"' in note and "0.5 s" in note
    assert notes.take() is None  # once
    notes.cut("item_b", 500)
    notes.reset()  # a new connection: nothing to tell
    assert notes.take() is None


def test_xai_sends_a_system_note_before_the_next_turn() -> None:
    core = xai.ready_core()
    xai.start_response(core)
    delta = base64.b64encode(SECOND).decode()
    core.receive(
        frames.frame(
            wire.content_event(
                "response.output_audio_transcript.delta", "resp_1", "item_1", delta=SAID
            )
        )
    )
    core.receive(
        frames.frame(
            wire.content_event("response.output_audio.delta", "resp_1", "item_1", delta=delta)
        )
    )
    core.cancel_response()
    core.truncate("item_1", 500)
    assert xai.sent(core) == []  # nothing on the wire until the user speaks again
    core.start_turn()
    note, clear = xai.sent(core)
    assert note["type"] == "conversation.item.create"
    assert note["item"]["role"] == "system"
    text = note["item"]["content"][0]["text"]
    assert '"It is ten past three…"' in text and "0.5 s" in text
    assert clear["type"] == "input_audio_buffer.clear"
    core.start_turn()
    assert [e["type"] for e in xai.sent(core)] == ["input_audio_buffer.clear"]  # once


def test_gemini_adds_the_note_to_the_context_without_asking_for_an_answer() -> None:
    core = gemini.ready_core()
    data = base64.b64encode(SECOND).decode()
    core.receive(
        gemini.server(
            {
                "serverContent": {
                    "modelTurn": {
                        "parts": [
                            {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": data}}
                        ]
                    }
                }
            }
        )
    )
    core.receive(gemini.server({"serverContent": {"outputTranscription": {"text": SAID}}}))
    [started, *_] = core.events_received()
    assert isinstance(started, ResponseStarted)
    response_id = started.response_id
    core.cancel_response()
    core.truncate(response_id, 500)
    core.start_turn()
    [(key, content)] = gemini.sent(core)
    assert key == "clientContent"
    assert content["turnComplete"] is False
    text = content["turns"][0]["parts"][0]["text"]
    assert '"It is ten past three…"' in text and "0.5 s" in text
    assert json.dumps(content).count("did not hear") == 1
