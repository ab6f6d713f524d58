"""The simulators' clock: a script's milliseconds at a speed, audio in paced chunks.

Layer: asyncio helpers, no sockets. Every simulator (realtime, Gemini,
ElevenLabs, the cascade's chat server) plays its script ``speed`` times
faster than real time; ``math.inf`` means no waiting at all, only a yield
to the loop so other tasks still run between chunks.

Audio is sent ahead, as the real services do (they stream a reply faster
than it plays): :class:`AudioPacer` keeps what was sent up to ``ahead_ms`` of
script time ahead of a schedule on the monotonic clock. Sleeping a chunk's
length after each chunk instead drifts behind real time by every wake-up's
lateness, so the speaker ran dry about twice a second at speed 1.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

from huxleyd.pcm import BYTES_PER_MS


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


AHEAD_MS = 500.0
"""How far ahead of real time the simulators send audio (script ms)."""


class AudioPacer:
    """Paces one stream of audio: ``await sent(ms)`` after each chunk.

    The schedule starts at the first chunk; ``sent`` returns at once while the
    audio sent so far is less than ``ahead_ms`` ahead of it, else waits until
    it is exactly that far ahead. Absolute, so lateness never accumulates.
    """

    def __init__(
        self,
        speed: float,
        *,
        ahead_ms: float = AHEAD_MS,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._speed = check_speed(speed)
        self._ahead_ms = ahead_ms
        self._monotonic = monotonic
        self._sleep = sleep
        self._start: float | None = None
        self._sent_ms = 0.0

    async def sent(self, ms: float) -> None:
        """``ms`` more of audio went out: wait while it is too far ahead of real time."""
        if self._start is None:
            self._start = self._monotonic()
        self._sent_ms += ms
        if math.isinf(self._speed):
            await self._sleep(0)
            return
        due = self._start + (self._sent_ms - self._ahead_ms) / 1000.0 / self._speed
        await self._sleep(max(0.0, due - self._monotonic()))
