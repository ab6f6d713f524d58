"""Echo cancellation for the microphone: Speex's canceller fed a far end
aligned by time.

The canceller needs, for each mic frame, what the speaker was playing when
that frame was captured. Counting samples is not enough: an xrun, a drained
ring or a clock that drifts moves the two streams apart. So the far end is
kept by **time**: :class:`FarEnd` stores what was sent to the DAC with the
time its first sample reached it (the speaker callback's
``outputBufferDacTime`` stamps, re-anchored at every write, so a gap or a
drift moves the anchor, not the alignment), and :meth:`FarEnd.index_at` says
which sample reached the DAC at any time. :class:`EchoCanceller` finds that
sample for each mic frame by its capture time (the ADC time), holds the
offset between the two streams while they run on, and hands both to Speex;
the adaptive filter models only the acoustic path (the room, a few ms to tens
of ms).

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
LOOKAHEAD_MS = 30
"""How far past a mic frame's capture stamp the far end is read. The filter can
only model an echo that comes after its reference. The callback backend's mic
stamps are the card's own capture times (PortAudio's ADC time, within 0.1 ms
on the clocked card), but a backend without them gives estimates (PyAudio's
blocking one, before issue 39: the read time minus the input latency PortAudio
reports, 19.5 ms early on the clocked card,
which a 5 ms room would turn into an echo *before* its reference, one no
filter can cancel), and another card's ADC time may be off too. Reading the
far end this much later keeps the echo after its reference for a stamp up to
this early; on the clocked card, 10 ms instead gained 1-2 dB and half a second
of convergence, not worth a canceller that a wrong stamp defeats."""
TAIL_MS = 160
"""The echo path the filter models: the look-ahead, the acoustic delay (a few ms
to tens of ms), the room's reverberation that matters, and the stamps' error."""
MIC_JUMP_S = 0.040
"""A mic stamp this far from where the samples counted say it should be is a gap
in the stream (an overrun, a drop, the mic closed): the timeline starts again
there. Stamps taken at the read time (PyAudio's blocking backend, before issue
39) jittered by up to a capture period (10 ms), so less would restart on jitter; the callback backend's (the
card's ADC time) by a tenth of a millisecond."""
FAR_JUMP_S = 0.002
"""The same for the speaker's DAC stamps, which jitter by half a sample on the
clocked card: a step of more than this is the output really moving (an
underrun, the first periods after idle, measured 6.4 ms off)."""
HOLD_S = 0.0015
"""How far (in time) the offset between the far end and the mic, measured by
time, may stray from the one held before the canceller moves its reference
(:class:`EchoCanceller`). The measure wanders with the timelines: at the
stamps' lower edge it is steady, but a thread that wakes late for most periods
(the clocked card's capture under the canceller's own load: 0.5-0.9 ms late
from the 10th to the 90th percentile, prompt once in a second or less) lets
the mic timeline creep up after the late ones and snap back at a prompt one, a
saw-tooth of 3-5 samples at 16 kHz (0.2-0.3 ms). Holding within 3 samples
moved the reference at each tooth, and the ERLE fell to 3-6 dB for a second or
two. A real move is larger than this: an xrun or a widening moves the streams
by a whole period (2.5 ms and more), a gap restarts a timeline
(:data:`MIC_JUMP_S`, :data:`FAR_JUMP_S`); a drift between two cards' clocks
(100 ppm: 0.1 ms a second) is followed every 15 s."""
EARLY = 0.3
LATE = 0.002
"""How fast a timeline follows a stamp earlier, and later, than it
(:class:`Timeline`): its truth is the stamps' lower edge. Both streams' stamps
are late, never early, by however long the thread that took them was kept
from it: on the clocked card each had a sharp lower edge (25 us below the
median) and a tail to 0.3-1.8 ms late under load. Following both ways alike
(the far end did, by 2 % a block) let a burst of late stamps drag a timeline
by a sample or more: the reference moved."""


class Timeline:
    """Smoothed times for a continuous stream of samples (the mic's, the speaker's).

    A block's stamp says when it was captured (or reaches the DAC) only within
    the jitter of the moment it was read; its sample count says exactly how
    far it is from the previous block. The timeline counts samples and follows
    the stamps slowly, and starts again at a stamp that jumps (``jump_s``: a
    gap, an xrun). An echo canceller needs that: a reference that moves by a
    sample or more from one block to the next (the clocked card's DAC stamps
    did, ±0.5 sample; the mic's by up to a capture period) is an echo path that
    never holds still.

    ``early``/``late``: how much of a stamp's distance the timeline moves when
    the stamp is earlier or later than it. A stamp is taken by a thread that may
    be kept from it, never one that runs ahead: late, never early, so the truth
    is the stamps' lower edge (a fast ``early``, a slow ``late`` that still
    follows a drifting clock; :data:`EARLY`, :data:`LATE`). For the same
    reason a stamp too early (by ``jump_s``) starts the timeline again at once,
    one too late only when the next one is too: a single late stamp is a
    thread held up, two in a row the stream moving (a gap, an underrun)."""

    def __init__(
        self, rate_hz: int, *, jump_s: float, early: float = EARLY, late: float = LATE
    ) -> None:
        self.rate_hz = rate_hz
        self._jump_s = jump_s
        self._early = early
        self._late = late
        self._next: float | None = None
        self._held_late = False
        """The last stamp was too late, and not followed."""
        self.restarts = 0
        """Times the timeline started again at a stamp (the first included)."""

    def at(self, stamp: float, samples: int) -> float:
        """The smoothed time of a block of ``samples`` stamped ``stamp``."""
        expected = self._next
        late = expected is not None and stamp - expected > self._jump_s
        if expected is None or stamp - expected < -self._jump_s or (late and self._held_late):
            self.restarts += 1
            expected = stamp
        elif not late:
            error = stamp - expected
            expected += (self._early if error < 0 else self._late) * error
        self._held_late = late and expected != stamp
        self._next = expected + samples / self.rate_hz
        return expected

    def reset(self) -> None:
        self._next = None
        self._held_late = False


class FarEnd:
    """What reached the DAC, by time: written as played, read by time span."""

    def __init__(self, rate_hz: int, *, keep_s: float = 2.0) -> None:
        self.rate_hz = rate_hz
        self._samples = np.zeros(int(keep_s * rate_hz), dtype=np.int16)
        self._written = 0
        """Samples ever written (the next one's index)."""
        self._anchors: deque[tuple[int, float]] = deque(maxlen=256)
        """(sample index, DAC time of that sample), one per write, oldest first."""
        self.timeline = Timeline(rate_hz, jump_s=FAR_JUMP_S)
        """The writes' DAC stamps, smoothed: what the anchors hold."""

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
        self._anchors.append((self._written, self.timeline.at(dac_time, len(samples))))
        self._written += len(samples)

    def index_at(self, time: float) -> float | None:
        """Which sample reached the DAC at ``time``: its index among all written, a
        fraction between two, by the newest write at or before ``time`` (the oldest
        kept when none is); None before anything was written."""
        if not self._anchors:
            return None
        index, anchor_time = self._anchors[0]
        for candidate, when in self._anchors:
            if when > time:
                break
            index, anchor_time = candidate, when
        return index + (time - anchor_time) * self.rate_hz

    def read(self, first: int, count: int) -> np.ndarray:
        """The ``count`` samples written from index ``first`` on (zeros for those not
        written yet, or older than the buffer keeps)."""
        out = np.zeros(count, dtype=np.int16)
        oldest = max(0, self._written - len(self._samples))
        for i in range(count):  # short spans (one frame): clarity over vectorising
            n = first + i
            if oldest <= n < self._written:
                out[i] = self._samples[n % len(self._samples)]
        return out


class EchoCanceller:
    """The mic without what the speaker put into it; feed it whole mic frames.

    Which far-end sample goes with which mic sample is an offset between the two
    streams' sample counts: measured by time for every frame (the mic's capture
    times against the far end's DAC times), but *held* while the measure stays
    within :data:`HOLD_S` of it. Two continuous streams keep a constant
    offset; the measure wanders by a fraction of a sample with the stamps'
    jitter, and rounding it afresh for every frame moved the reference by a
    whole sample whenever it crossed a half: to the adaptive filter a new echo
    path, which it took a second or two to learn again (the clocked card's dips,
    to 7-10 dB). A measure further off than that is the streams really moving
    (an xrun, a gap, a drift): the offset follows it at once (:attr:`realigns`)."""

    def __init__(self, far: FarEnd, *, tail_ms: int = TAIL_MS, suppress: bool = True) -> None:
        if KERNEL is None:
            raise RuntimeError("the echo canceller was not built (libspeexdsp-dev missing)")
        self.far = far
        self.mic_time = Timeline(far.rate_hz, jump_s=MIC_JUMP_S)
        self._frame = far.rate_hz * FRAME_MS // 1000
        self._aec = KERNEL.Canceller(
            self._frame, far.rate_hz * tail_ms // 1000, far.rate_hz, suppress
        )
        self._mic_count = 0
        """Mic samples processed: the mic's side of the offset."""
        self._offset: int | None = None
        """Far-end index minus mic sample count, held (None: not measured yet)."""
        self._hold = HOLD_S * far.rate_hz
        """:data:`HOLD_S` in far-end samples."""
        self.realigns = 0
        """Times the held offset moved (the first measure included)."""

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
        at = self.mic_time.at(captured_at, len(samples)) + LOOKAHEAD_MS / 1000
        for start in range(0, len(samples), self._frame):
            far = self.far.read(self._align(at + start / rate), self._frame)
            out += self._aec.process(samples[start : start + self._frame].tobytes(), far.tobytes())
            self._mic_count += self._frame
        return bytes(out)

    def _align(self, at: float) -> int:
        """The far-end index to read for the next mic frame, whose far end starts at ``at``."""
        measured = self.far.index_at(at)
        if measured is None:  # nothing played yet: an index nothing was written at
            return -self._frame
        offset = measured - self._mic_count
        if self._offset is None or abs(offset - self._offset) > self._hold:
            self._offset = round(offset)
            self.realigns += 1
        return self._mic_count + self._offset

    def reset(self) -> None:
        self._aec.reset()
        self.mic_time.reset()
        self._offset = None
