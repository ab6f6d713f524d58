"""Provider core cost per 20 ms audio frame, against plain json + base64.

The core sits on the hot path twice: every mic frame becomes an
``input_audio_buffer.append`` frame (50 a second) and every model audio
delta is parsed into an AudioChunk. Each row measures the core and, in the
same run, the bare minimum any client must do for the same payload
(``json.loads`` + ``base64.b64decode``, ``json.dumps`` + ``base64.b64encode``),
so the ratio shows what the core's bookkeeping costs.
"""

from __future__ import annotations

import base64
import json
import timeit
from collections.abc import Callable

from bench import Row
from huxleyd.providers.openai_core import OpenAIRealtimeCore

FRAME_MS = 20
PCM = bytes(range(256)) * (FRAME_MS * 48 // 256) + bytes(FRAME_MS * 48 % 256)


def _best_us(fn: Callable[[], object], number: int = 2000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _delta_frame(pcm: bytes) -> str:
    return json.dumps(
        {
            "type": "response.output_audio.delta",
            "event_id": "event_123",
            "response_id": "resp_1",
            "item_id": "item_1",
            "output_index": 0,
            "content_index": 0,
            "delta": base64.b64encode(pcm).decode("ascii"),
        }
    )


def _parse_rows() -> list[Row]:
    core = OpenAIRealtimeCore()
    core.connection_opened()
    frame = _delta_frame(PCM)

    def with_core() -> object:
        core.receive(frame)
        return core.events_received()

    def baseline() -> object:
        return base64.b64decode(json.loads(frame)["delta"])

    return [
        Row(
            "providers",
            f"parse {FRAME_MS} ms audio delta",
            _best_us(with_core),
            "µs",
            _best_us(baseline),
            "json.loads+b64decode",
            budget=f"≪ {FRAME_MS * 1000} µs (one frame)",
        )
    ]


def _append_rows() -> list[Row]:
    core = OpenAIRealtimeCore()
    core.connection_opened()

    def with_core() -> object:
        core.append_audio(PCM)
        return core.messages_to_send()

    def baseline() -> object:
        audio = base64.b64encode(PCM).decode("ascii")
        return json.dumps({"type": "input_audio_buffer.append", "audio": audio})

    return [
        Row(
            "providers",
            f"build {FRAME_MS} ms append frame",
            _best_us(with_core),
            "µs",
            _best_us(baseline),
            "json.dumps+b64encode",
            budget=f"≪ {FRAME_MS * 1000} µs (one frame)",
        )
    ]


def run() -> list[Row]:
    return _parse_rows() + _append_rows()
