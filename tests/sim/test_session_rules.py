"""The simulated OpenAI server's rules, driven without a socket: the GA
server's refusals (a commit under 100 ms, a second response, a truncate past
the audio sent, a transcription session) and every event it sends is a
typed ``RealtimeServerEvent``."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

from huxleyd.sim.record import Script, SimRecord
from huxleyd.sim.scenario import Scenario
from huxleyd.sim.session import MIN_COMMIT_MS, SimSession, words_for_chunk
from huxleyd.sim.validate import validate_server_event


class Peer:
    """The client side of the socket: what the session sent, decoded."""

    def __init__(self) -> None:
        self.record = SimRecord(Script(Scenario(default_reply="Hello there.")))
        self.frames: list[dict[str, Any]] = []
        self.aborted = False
        self.session = SimSession(
            record=self.record,
            send=self.send,
            abort=self.abort,
            model="gpt-realtime",
            speed=math.inf,
            chunk_ms=100,
            synth="tone",
        )

    async def send(self, text: str) -> None:
        validate_server_event(text)  # what the real server could send
        self.frames.append(json.loads(text))

    def abort(self) -> None:
        self.aborted = True

    async def client(self, event: dict[str, Any]) -> None:
        await self.session.handle(json.dumps(event))

    def types(self) -> list[str]:
        return [f["type"] for f in self.frames]

    def errors(self) -> list[str]:
        return [f["error"]["code"] for f in self.frames if f["type"] == "error"]


def append(ms: int) -> dict[str, Any]:
    pcm = b"\0\1" * (24 * ms)
    return {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}


async def test_the_session_is_created_then_updated() -> None:
    peer = Peer()
    await peer.session.start()
    await peer.client(
        {"type": "session.update", "session": {"type": "realtime", "instructions": "Be brief."}}
    )
    assert peer.types() == ["session.created", "session.updated"]
    assert peer.frames[1]["session"]["instructions"] == "Be brief."
    assert peer.frames[1]["session"]["model"] == "gpt-realtime"


async def test_a_transcription_session_is_refused() -> None:
    peer = Peer()
    await peer.client({"type": "session.update", "session": {"type": "transcription"}})
    assert peer.errors() == ["invalid_value"]
    assert [v.event for v in peer.record.violations] == ["session.update"]


async def test_a_commit_under_100_ms_is_refused_like_the_servers() -> None:
    peer = Peer()
    await peer.client(append(MIN_COMMIT_MS - 20))
    await peer.client({"type": "input_audio_buffer.commit", "event_id": "c1"})
    assert peer.errors() == ["input_audio_buffer_commit_empty"]
    assert peer.frames[-1]["error"]["event_id"] == "c1"  # names the refused client event
    assert "only has 80.00ms of audio" in peer.frames[-1]["error"]["message"]
    assert peer.record.committed_audio == []
    await peer.client(append(40))  # the buffer kept the first 80 ms: now 120
    await peer.client({"type": "input_audio_buffer.commit"})
    assert peer.types()[-3:] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert peer.record.committed_ms == [120.0]


async def test_one_response_at_a_time_and_it_is_spoken() -> None:
    peer = Peer()
    await peer.client({"type": "response.create"})
    await peer.client({"type": "response.create", "event_id": "second"})
    assert peer.errors() == ["conversation_already_has_active_response"]
    await peer.record.wait_until(lambda: peer.record.responses_done == 1)
    done = peer.frames[-1]
    assert done["type"] == "response.done" and done["response"]["status"] == "completed"
    assert "response.output_audio.delta" in peer.types()
    words = "".join(
        f["delta"] for f in peer.frames if f["type"] == "response.output_audio_transcript.delta"
    )
    assert words.split() == ["Hello", "there."]


async def test_a_truncate_past_the_audio_sent_is_an_error() -> None:
    peer = Peer()
    await peer.client({"type": "response.create"})
    await peer.record.wait_until(lambda: peer.record.responses_done == 1)
    item = next(f["item"]["id"] for f in peer.frames if f["type"] == "response.output_item.done")
    sent_ms = sum(
        len(base64.b64decode(f["delta"])) / 48
        for f in peer.frames
        if f["type"] == "response.output_audio.delta"
    )
    truncate = {"type": "conversation.item.truncate", "item_id": item, "content_index": 0}
    await peer.client({**truncate, "audio_end_ms": int(sent_ms) + 50})
    assert peer.errors() == ["invalid_value"]
    await peer.client({**truncate, "audio_end_ms": 100})
    assert peer.frames[-1] == {
        "type": "conversation.item.truncated",
        "item_id": item,
        "content_index": 0,
        "audio_end_ms": 100,
        "event_id": peer.frames[-1]["event_id"],
    }
    await peer.client({**truncate, "item_id": "nope", "audio_end_ms": 0})
    assert peer.errors()[-1] == "item_not_found"


async def test_binary_and_unknown_frames_are_violations() -> None:
    peer = Peer()
    await peer.session.handle(b"{}")
    await peer.session.handle('{"type": "input_audio_buffer.append", "data": "AA=="}')
    assert peer.errors() == ["invalid_request_error", "invalid_event"]
    assert len(peer.record.violations) == 2


def test_words_are_spread_over_the_audio_chunks() -> None:
    words = ["one", "two", "three", "four", "five"]
    spread = [words_for_chunk(words, i, 3) for i in range(3)]
    assert "".join(w for chunk in spread for w in chunk) == " ".join(words)
    assert all(spread)  # every chunk carries some of the words
