"""The simulator's ElevenLabs text-to-speech ``stream-input`` websocket.

Layer: adapter (websockets 15 asyncio server). It serves
``/v1/text-to-speech/{voice_id}/stream-input?model_id=…&output_format=pcm_24000``
like the real service in the part a streaming client uses:

- the first message opens the stream (``{"text": " ", "voice_settings": …,
  "generation_config": …, "xi-api-key"?: …}``); the key may come in the
  ``xi-api-key`` header instead;
- text messages (``{"text": "Hello there. ", "flush": true}``) are buffered;
  a ``flush`` — or the buffer reaching the first ``chunk_length_schedule``
  size — makes speech for the buffer;
- ``{"text": ""}`` ends the input: the rest is spoken, then
  ``{"isFinal": true}`` and the server closes;
- speech goes out as ``{"audio": base64 PCM16 24 kHz, "alignment": {chars,
  charStartTimesMs, charDurationsMs}}`` messages of ``chunk_ms`` each, paced
  by ``speed``.

Every session is recorded (:class:`TtsSession`): the text it was asked to
read, the flushes, the audio sent, and whether the client closed before
``isFinal`` — what the barge-in tests look at. Speech is espeak-ng (or word
tones), i.e. a simulator talking.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from huxleyd.pcm import BYTES_PER_MS
from huxleyd.sim.loopback import LoopbackServer
from huxleyd.sim.pacing import AudioPacer, audio_chunks, check_speed
from huxleyd.sim.speech import SynthMode, synthesize

PATH = re.compile(r"^/v1/text-to-speech/(?P<voice>[^/]+)/stream-input$")
DEFAULT_SCHEDULE_CHARS = 120
"""Generate without a flush once this much text waits (ElevenLabs' first schedule step)."""


@dataclass(slots=True)
class TtsSession:
    """One stream-input connection as the sim saw it."""

    voice_id: str
    model_id: str | None
    output_format: str | None
    header_key: bool
    authorized: bool = False
    voice_settings: dict[str, Any] | None = None
    texts: list[str] = field(default_factory=list)
    """Every text message after the opening one, as received (the final "" excluded)."""
    flushes: int = 0
    generated: list[str] = field(default_factory=list)
    """The text of each generation, in order."""
    audio_bytes: int = 0
    batches_done: int = 0
    """Generations whose audio was sent to the end."""
    final_sent: bool = False
    ended_by_client: bool = False
    """The input ended with ``{"text": ""}``."""
    closed_early: bool = False
    """The client closed the socket before ``isFinal``: an aborted stream."""
    problems: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """All text it was asked to read, whitespace collapsed."""
        return " ".join("".join(self.texts).split())


class ElevenLabsSim(LoopbackServer):
    """A local stream-input peer. ``async with ElevenLabsSim() as tts: tts.url``."""

    def __init__(
        self,
        *,
        speed: float = 1.0,
        synth: SynthMode = "auto",
        api_key: str | None = None,
        chunk_ms: int = 40,
        host: str = "127.0.0.1",
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(host=host)
        self._speed = check_speed(speed)
        self._synth: SynthMode = synth
        self._api_key = api_key
        self._chunk_ms = chunk_ms
        self._on_change = on_change
        self.sessions: list[TtsSession] = []
        self.refused: list[tuple[str, int]] = []
        """Handshakes answered with an HTTP error: (path, status)."""

    @property
    def url(self) -> str:
        """``ws://127.0.0.1:PORT`` (the base the client adds ``/v1/text-to-speech/…`` to)."""
        return f"ws://{self._host}:{self.port}"

    def _what(self) -> str:
        return "the ElevenLabs simulator"

    # ------------------------------------------------------------ handshake

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        query = parse_qs(url.query)
        problem: tuple[HTTPStatus, str] | None = None
        if PATH.match(url.path) is None:
            problem = HTTPStatus.NOT_FOUND, f"no stream-input endpoint at {url.path}"
        elif query.get("output_format", ["mp3_44100_128"])[0] != "pcm_24000":
            problem = HTTPStatus.BAD_REQUEST, "the simulator only produces output_format=pcm_24000"
        elif self._api_key is not None and request.headers.get("xi-api-key") not in (
            None,
            self._api_key,
        ):
            problem = HTTPStatus.UNAUTHORIZED, "invalid xi-api-key"
        if problem is None:
            return None
        self.refused.append((request.path, problem[0].value))
        self._on_change()
        return connection.respond(problem[0], problem[1] + "\n")

    # ------------------------------------------------------------ one stream

    async def _handle(self, connection: ServerConnection) -> None:
        request = connection.request
        assert request is not None
        url = urlsplit(request.path)
        query = parse_qs(url.query)
        match = PATH.match(url.path)
        assert match is not None
        session = TtsSession(
            voice_id=match.group("voice"),
            model_id=query.get("model_id", [None])[0],
            output_format=query.get("output_format", [None])[0],
            header_key="xi-api-key" in request.headers,
        )
        session.authorized = self._api_key is None or request.headers.get("xi-api-key") == (
            self._api_key
        )
        self.sessions.append(session)
        self._on_change()
        batches: asyncio.Queue[str | None] = asyncio.Queue()
        speaker = asyncio.get_running_loop().create_task(self._speak(connection, session, batches))
        try:
            if await self._receive(connection, session, batches):
                await speaker  # speaks the rest, sends isFinal, closes
        except ConnectionClosed:
            pass
        finally:
            speaker.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await speaker
            session.closed_early = not session.final_sent
            self._on_change()

    async def _receive(
        self, connection: ServerConnection, session: TtsSession, batches: asyncio.Queue[str | None]
    ) -> bool:
        """Read the input; True once it ended with ``{"text": ""}``, False if the client left."""
        opened = False
        buffer = ""
        schedule = DEFAULT_SCHEDULE_CHARS
        async for frame in connection:
            message = _decode(frame, session)
            if message is None:
                continue
            text = message.get("text")
            if not opened:
                opened = True
                schedule = self._open(message, session)
                if not session.authorized:
                    await connection.close(1008, "invalid xi-api-key")
                    return False
                continue
            if text == "":
                session.ended_by_client = True
                self._on_change()
                if buffer:
                    await batches.put(buffer)
                await batches.put(None)
                return True
            session.texts.append(str(text))
            buffer += str(text)
            if message.get("flush") is True:
                session.flushes += 1
            if message.get("flush") is True or len(buffer) >= schedule:
                await batches.put(buffer)
                buffer = ""
            self._on_change()
        return False

    def _open(self, message: dict[str, Any], session: TtsSession) -> int:
        if message.get("text") != " ":
            session.problems.append(f"the first message must have text ' ', got {message!r}")
        settings = message.get("voice_settings")
        session.voice_settings = settings if isinstance(settings, dict) else None
        key = message.get("xi-api-key")
        if self._api_key is not None and not session.header_key:
            session.authorized = key == self._api_key
        generation = message.get("generation_config") or {}
        schedule = generation.get("chunk_length_schedule") if isinstance(generation, dict) else None
        if isinstance(schedule, list) and schedule and isinstance(schedule[0], int | float):
            return max(1, int(schedule[0]))
        return DEFAULT_SCHEDULE_CHARS

    async def _speak(
        self, connection: ServerConnection, session: TtsSession, batches: asyncio.Queue[str | None]
    ) -> None:
        pacer = AudioPacer(self._speed)  # one schedule for the session's audio
        while (text := await batches.get()) is not None:
            if not any(c.isalnum() for c in text):
                continue
            session.generated.append(text)
            pcm = await asyncio.to_thread(synthesize, text.strip(), self._synth)
            pieces = audio_chunks(pcm, self._chunk_ms)
            for index, piece in enumerate(pieces):
                chars = _chars_for(text, index, len(pieces))
                await connection.send(json.dumps(_audio_message(piece, chars)))
                session.audio_bytes += len(piece)
                self._on_change()
                await pacer.sent(len(piece) / BYTES_PER_MS)
            session.batches_done += 1
            self._on_change()
        await connection.send(json.dumps({"audio": None, "isFinal": True, "alignment": None}))
        session.final_sent = True
        self._on_change()
        await connection.close(1000, "done")


def _decode(frame: str | bytes, session: TtsSession) -> dict[str, Any] | None:
    try:
        message = json.loads(frame)
    except ValueError:
        session.problems.append(f"not JSON: {frame[:80]!r}")
        return None
    if not isinstance(message, dict) or not isinstance(message.get("text"), str):
        session.problems.append(f"a message without a text string: {message!r}")
        return None
    return message


def _chars_for(text: str, index: int, count: int) -> str:
    """The share of ``text`` voiced by audio piece ``index`` of ``count`` (even split)."""
    start = len(text) * index // count
    end = len(text) * (index + 1) // count
    return text[start:end]


def _audio_message(pcm: bytes, chars: str) -> dict[str, Any]:
    duration_ms = len(pcm) // BYTES_PER_MS
    per_char = duration_ms // max(1, len(chars))
    alignment = {
        "chars": list(chars),
        "charStartTimesMs": [i * per_char for i in range(len(chars))],
        "charDurationsMs": [per_char] * len(chars),
    }
    return {
        "audio": base64.b64encode(pcm).decode("ascii"),
        "isFinal": None,
        "normalizedAlignment": alignment,
        "alignment": alignment,
    }
