"""The simulated Gemini Live server's rules, driven without a socket: setup
first, errors only as close codes, activity markers only with its VAD off,
an ended activity answered by itself, resumption from its own handles."""

from __future__ import annotations

import json
import math
from typing import Any

from huxleyd.providers import gemini_wire
from huxleyd.sim.gemini_session import CLOSE_CODES, GeminiSimSession
from huxleyd.sim.gemini_validate import validate_gemini_server_message
from huxleyd.sim.record import Script, SimRecord
from huxleyd.sim.scenario import Scenario


class Peer:
    def __init__(self, record: SimRecord | None = None) -> None:
        self.record = record or SimRecord(Script(Scenario(default_reply="Hi.")))
        self.messages: list[dict[str, Any]] = []
        self.closes: list[tuple[int, str]] = []
        self.session = GeminiSimSession(
            record=self.record,
            send=self.send,
            abort=lambda: None,
            close_socket=self.close_socket,
            model="",
            speed=math.inf,
            chunk_ms=100,
            synth="tone",
        )

    async def send(self, frame: str | bytes) -> None:
        assert isinstance(frame, bytes), "Gemini sends JSON in binary frames"
        message = json.loads(frame)
        validate_gemini_server_message(message)
        self.messages.append(message)

    async def close_socket(self, code: int, reason: str) -> None:
        self.closes.append((code, reason))

    async def client(self, message: str | dict[str, Any]) -> None:
        await self.session.handle(message if isinstance(message, str) else json.dumps(message))

    def keys(self) -> list[str]:
        return [next(iter(m)) for m in self.messages]


def setup(*, vad_off: bool = True, handle: str | None = None, model: str = "gemini-x") -> str:
    message = gemini_wire.setup_message(
        model=model, instructions="", declarations=[], voice="Puck", handle=handle
    )
    if not vad_off:
        del message["setup"]["realtimeInputConfig"]
    return json.dumps(message)


async def test_the_first_message_must_be_setup() -> None:
    peer = Peer()
    await peer.client(gemini_wire.activity_message("activityStart"))
    assert peer.closes == [(1007, "the first message must be setup")]
    assert peer.messages == []


async def test_a_model_without_its_prefix_closes_with_invalid_argument() -> None:
    peer = Peer()
    await peer.client({"setup": {"model": "gemini-x"}})
    assert [code for code, _ in peer.closes] == [1007]
    assert "models/" in peer.closes[0][1]


async def test_activity_markers_need_the_vad_off() -> None:
    peer = Peer()
    await peer.client(setup(vad_off=False))
    assert peer.keys() == ["setupComplete"]
    await peer.client(gemini_wire.activity_message("activityStart"))
    assert peer.closes and peer.closes[0][0] == 1007


async def test_an_ended_activity_is_heard_and_answered() -> None:
    peer = Peer()
    await peer.client(setup())
    await peer.client(gemini_wire.activity_message("activityStart"))
    await peer.client(gemini_wire.audio_message(b"\0\1" * 3200))  # 200 ms at 16 kHz
    await peer.client(gemini_wire.activity_message("activityEnd"))
    await peer.record.wait_until(
        lambda: any(m.get("serverContent", {}).get("turnComplete") for m in peer.messages)
    )
    assert peer.record.committed_ms == [200.0]
    assert peer.record.labels == [
        "setup",
        "realtimeInput.activityStart",
        "realtimeInput.audio",
        "realtimeInput.activityEnd",
    ]
    content = [m["serverContent"] for m in peer.messages if "serverContent" in m]
    assert any("modelTurn" in c for c in content)  # it spoke
    assert peer.closes == []


async def test_a_conversation_resumes_only_from_a_handle_it_gave() -> None:
    peer = Peer()
    await peer.client(setup(handle="never-given"))
    assert peer.closes == [(1008, "unknown session resumption handle")]
    first = Peer()
    await first.client(setup())
    await first.client(gemini_wire.client_content(["hello"]))
    await first.record.wait_until(lambda: bool(first.record.gemini.handles_sent))
    handle = next(iter(first.record.gemini.handles_sent))
    again = Peer(first.record)
    await again.client(setup(handle=handle))
    assert again.keys() == ["setupComplete"] and again.closes == []
    assert first.record.gemini.resumed_handles == [handle]


def test_scripted_errors_become_gemini_close_codes() -> None:
    assert CLOSE_CODES == {
        "invalid_argument": 1007,
        "policy_violation": 1008,
        "try_again_later": 1013,
    }
    assert all(gemini_wire.is_error_close(code) for code in CLOSE_CODES.values())
