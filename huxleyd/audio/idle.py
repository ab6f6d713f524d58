"""The idle audio thread sleeps: no Python runs per period while nothing can change.

With the C callbacks (:mod:`~huxleyd.audio.backends.callback_backend`) the card
needs no Python when it only plays silence: the speaker callback plays zeros
from its empty ring, the mic callback keeps filling its own. So when no source
has audio, no ramp runs, every written frame has reached the DAC and nobody
listens to the mic, the engine's thread sleeps on the mixer's
:class:`~huxleyd.audio.doorbell.Doorbell` (GIL released) until asyncio rings
it or ``wake_s`` passes (housekeeping: a lost device is noticed, the meters
move, and the periods counter, the systemd watchdog's proof that the audio
thread lives, advances by the periods slept: a thread stuck for good still
stops it).

On waking it catches the mic up without a seam: everything captured but the
newest two periods is skipped (not counted as lost: nobody listened), the
older of the two primes the capture resampler's history and the meter, and the
engine's next read takes the newest, so the next frame is continuous.

**What the meters read while idle**: the mic meter holds its level between
wake-ups, falling as it would over the periods slept, and takes the newest
period's level at each wake (every ``wake_s``, 0.5 s); the speaker meter falls
as for silence, which is what the card plays.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from huxleyd.audio.backends.base import AudioBackend, IoStatus, QueuedInput
from huxleyd.audio.chains import CaptureChain
from huxleyd.audio.doorbell import Doorbell
from huxleyd.audio.levels import LevelMeter
from huxleyd.clock import Clock

WAKE_S = 0.5
"""The longest sleep: housekeeping (device loss, meters) at 2 Hz instead of 50."""


class IdleSleeper:
    """Sleeps the audio thread while idle; resynchronises the mic when it wakes."""

    def __init__(
        self,
        doorbell: Doorbell,
        backend: AudioBackend,
        queued: QueuedInput,
        *,
        clock: Clock,
        period_s: float,
        meters: tuple[LevelMeter, LevelMeter],
        wake_s: float = WAKE_S,
    ) -> None:
        self.doorbell = doorbell
        self._backend = backend
        self._queued = queued
        self._clock = clock
        self._period_s = period_s
        self._meters = meters
        self.wake_s = wake_s
        self.sleeps = 0
        """Times the thread slept (each at most ``wake_s``)."""

    def sleep(self, still_idle: Callable[[], bool], stopping: threading.Event) -> int | None:
        """Sleep if ``still_idle()`` holds once the doorbell is armed; return the
        whole periods slept, or None when it did not sleep."""
        bell = self.doorbell
        bell.arm()
        if stopping.is_set() or not still_idle():  # a request landed meanwhile
            bell.disarm()
            return None
        start = self._clock.monotonic()
        bell.sleep(self.wake_s)
        self.sleeps += 1
        periods = int((self._clock.monotonic() - start) / self._period_s)
        for meter in self._meters:
            meter.decay(periods)
        return periods

    def resync(self, capture: CaptureChain, rate_hz: int) -> None:
        """After a sleep: skip to the newest two mic periods and prime from the older."""
        frames = capture.buffer.shape[0]
        self._queued.discard_input(2 * frames)
        if self._queued.input_queued_frames() < frames:
            return  # slept less than a period: the history is still continuous
        if self._backend.read(capture.buffer) is IoStatus.OK:
            capture.prime(rate_hz)
