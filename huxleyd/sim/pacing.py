"""The simulators' clock: a script's milliseconds at a speed, audio in paced chunks.

Layer: asyncio helpers, no sockets. Every simulator (realtime, Gemini,
ElevenLabs, the cascade's chat server) plays its script ``speed`` times
faster than real time; ``math.inf`` means no waiting at all, only a yield
to the loop so other tasks still run between chunks.
"""

from __future__ import annotations

import asyncio
import math

from huxleyd.audio.pcm import BYTES_PER_MS


def check_speed(speed: float) -> float:
    """``speed`` if it is a pacing factor (> 0, ``math.inf`` allowed); ValueError otherwise."""
    if not speed > 0:
        raise ValueError(f"speed must be > 0 (math.inf for no pacing), got {speed}")
    return speed


async def sleep_script_ms(ms: float, speed: float) -> None:
    """Wait ``ms`` of script time at ``speed``."""
    await asyncio.sleep(0 if math.isinf(speed) else ms / 1000.0 / speed)


def audio_chunks(pcm: bytes, chunk_ms: int) -> list[bytes]:
    """``pcm`` (24 kHz PCM16) cut into ``chunk_ms`` pieces, the last one shorter."""
    step = chunk_ms * BYTES_PER_MS
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]
