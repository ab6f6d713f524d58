"""Echo cancellation for the microphone: Speex's canceller fed a far end
aligned by time.

The canceller needs, for each mic frame, what the speaker was playing when
that frame was captured. Counting samples is not enough: an xrun, a drained
ring or a clock that drifts moves the two streams apart. So the far end is
kept by **time**: :class:`FarEnd` stores what was sent to the DAC with the
time its first sample reached it (the speaker callback's
``outputBufferDacTime`` stamps, re-anchored at every write, so a gap or a
drift moves the anchor, not the alignment), and :meth:`FarEnd.at` reads
the samples that reached the DAC over any span of time (silence where
nothing played). :class:`EchoCanceller` reads that span for each mic frame
by its capture time (the ADC time) and hands both to Speex; the adaptive
filter models only the acoustic path (the room, a few ms to tens of ms).

The C part (``huxleyd.audio._aec``, libspeexdsp) is optional:
:data:`AVAILABLE` says whether it was built, and without it the wake word
does not listen while the speaker plays.
"""

from __future__ import annotations

from collections import deque
from types import ModuleType

import numpy as np

from huxleyd.pcm import pcm16_view

try:
    from huxleyd.audio import _aec as _kernel

    KERNEL: ModuleType | None = _kernel
except ImportError:  # built without libspeexdsp-dev
    KERNEL = None

AVAILABLE = KERNEL is not None

FRAME_MS = 10
TAIL_MS = 128
"""The echo path the filter models: the room's reverberation that matters plus
the alignment's error (the acoustic delay itself, a few ms to tens of ms)."""


class FarEnd:
    """What reached the DAC, by time: written as played, read by time span."""

    def __init__(self, rate_hz: int, *, keep_s: float = 2.0) -> None:
        self.rate_hz = rate_hz
        self._samples = np.zeros(int(keep_s * rate_hz), dtype=np.int16)
        self._written = 0
        """Samples ever written (the next one's index)."""
        self._anchors: deque[tuple[int, float]] = deque(maxlen=256)
        """(sample index, DAC time of that sample), one per write, oldest first."""

    def played(self, pcm: bytes, dac_time: float) -> None:
        """``pcm`` (PCM16 at ``rate_hz``) whose first sample reached the DAC at ``dac_time``."""
        samples = pcm16_view(pcm)
        size = len(self._samples)
        for offset in range(0, len(samples), size):
            part = samples[offset : offset + size]
            start = (self._written + offset) % size
            first = min(len(part), size - start)
            self._samples[start : start + first] = part[:first]
            self._samples[: len(part) - first] = part[first:]
        self._anchors.append((self._written, dac_time))
        self._written += len(samples)

    def at(self, start_time: float, count: int) -> np.ndarray:
        """The ``count`` samples that reached the DAC from ``start_time`` on (zeros
        where nothing played, or what is older than the buffer keeps)."""
        out = np.zeros(count, dtype=np.int16)
        if not self._anchors:
            return out
        index, anchor_time = self._anchors[0]
        for candidate, when in self._anchors:
            if when > start_time:
                break
            index, anchor_time = candidate, when
        first = index + round((start_time - anchor_time) * self.rate_hz)
        oldest = max(0, self._written - len(self._samples))
        for i in range(count):  # short spans (one frame): clarity over vectorising
            n = first + i
            if oldest <= n < self._written:
                out[i] = self._samples[n % len(self._samples)]
        return out


class EchoCanceller:
    """The mic without what the speaker put into it; feed it whole mic frames."""

    def __init__(self, far: FarEnd, *, tail_ms: int = TAIL_MS, suppress: bool = True) -> None:
        if KERNEL is None:
            raise RuntimeError("the echo canceller was not built (libspeexdsp-dev missing)")
        self.far = far
        self._frame = far.rate_hz * FRAME_MS // 1000
        self._aec = KERNEL.Canceller(
            self._frame, far.rate_hz * tail_ms // 1000, far.rate_hz, suppress
        )

    def process(self, mic: bytes, captured_at: float) -> bytes:
        """``mic`` (PCM16, a whole number of 10 ms frames) whose first sample was
        captured at ``captured_at``, with the echo removed."""
        samples = pcm16_view(mic)
        if len(samples) % self._frame:
            raise ValueError(
                f"echo canceller: expected whole {FRAME_MS} ms frames of {self._frame} samples, "
                f"got {len(samples)}"
            )
        out = bytearray()
        rate = self.far.rate_hz
        for start in range(0, len(samples), self._frame):
            far = self.far.at(captured_at + start / rate, self._frame)
            out += self._aec.process(samples[start : start + self._frame].tobytes(), far.tobytes())
        return bytes(out)

    def reset(self) -> None:
        self._aec.reset()
