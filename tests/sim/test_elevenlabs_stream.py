"""The ElevenLabs ``stream-input`` simulator as a streaming client meets it:
the handshake's refusals, text spoken at a flush with aligned audio, the
end of input answered by ``isFinal``, a bad key closed with 1008, and an
early close recorded as an aborted stream."""

from __future__ import annotations

import asyncio
import base64
import json
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from huxleyd.sim.elevenlabs import ElevenLabsSim

PATH = "/v1/text-to-speech/voice1/stream-input?model_id=eleven_flash_v2_5"
OPEN = {"text": " ", "voice_settings": {"stability": 0.5}}


class Watched:
    """The simulator, and a way to wait until what it recorded says something."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()
        self.sim = ElevenLabsSim(
            speed=math.inf, synth="tone", api_key="xi-good", on_change=self.changed.set
        )

    async def until(self, check: Callable[[], bool]) -> None:
        async with asyncio.timeout(10):
            while not check():
                self.changed.clear()
                await self.changed.wait()


@asynccontextmanager
async def simulator() -> AsyncIterator[Watched]:
    watched = Watched()
    async with watched.sim:
        yield watched


def url(tts: ElevenLabsSim, output_format: str = "pcm_24000") -> str:
    return f"{tts.url}{PATH}&output_format={output_format}"


async def read_all(ws: ClientConnection) -> list[dict[str, object]]:
    messages = []
    async for frame in ws:
        messages.append(json.loads(frame))
    return messages


async def test_text_is_spoken_at_a_flush_and_the_end_is_final() -> None:
    headers = {"xi-api-key": "xi-good"}
    async with simulator() as watched, connect(url(watched.sim), additional_headers=headers) as ws:
        await ws.send(json.dumps(OPEN))
        await ws.send(json.dumps({"text": "Hello there. ", "flush": True}))
        await ws.send(json.dumps({"text": "Bye. "}))
        await ws.send(json.dumps({"text": ""}))
        messages = await read_all(ws)
    assert ws.close_code == 1000
    assert messages[-1] == {"audio": None, "isFinal": True, "alignment": None}
    audio = messages[:-1]
    pcm = b"".join(base64.b64decode(str(m["audio"])) for m in audio)
    spoken = "".join("".join(m["alignment"]["chars"]) for m in audio)  # type: ignore[index]
    assert spoken == "Hello there. Bye. "  # every character aligned to some audio
    (session,) = watched.sim.sessions
    assert session.voice_id == "voice1" and session.model_id == "eleven_flash_v2_5"
    assert session.authorized and session.header_key and session.flushes == 1
    assert session.generated == ["Hello there. ", "Bye. "]
    assert session.text == "Hello there. Bye."
    assert session.audio_bytes == len(pcm) > 0 and not session.closed_early


async def test_a_wrong_format_or_key_is_refused_at_the_handshake() -> None:
    async with simulator() as watched:
        await refused_twice(watched.sim)


async def refused_twice(tts: ElevenLabsSim) -> None:
    with pytest.raises(InvalidStatus) as wrong:
        async with connect(url(tts, "mp3_44100_128")):
            pass
    assert wrong.value.response.status_code == 400
    with pytest.raises(InvalidStatus) as bad_key:
        async with connect(url(tts), additional_headers={"xi-api-key": "xi-bad"}):
            pass
    assert bad_key.value.response.status_code == 401
    assert [status for _, status in tts.refused] == [400, 401]


async def test_a_bad_key_in_the_first_message_closes_with_1008() -> None:
    async with simulator() as watched, connect(url(watched.sim)) as ws:
        await ws.send(json.dumps({**OPEN, "xi-api-key": "xi-bad"}))
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    assert ws.close_code == 1008
    assert not watched.sim.sessions[0].authorized


async def test_a_client_that_leaves_before_the_end_aborted_its_stream() -> None:
    async with simulator() as watched:
        headers = {"xi-api-key": "xi-good"}
        async with connect(url(watched.sim), additional_headers=headers) as ws:
            await ws.send(json.dumps(OPEN))
            await ws.send(json.dumps({"text": "Half a sentence", "flush": True}))
            await ws.recv()  # some audio came: now the user barges in
        session = watched.sim.sessions[0]
        await watched.until(lambda: session.closed_early)
    assert session.texts == ["Half a sentence"]
    assert not session.ended_by_client and not session.final_sent
