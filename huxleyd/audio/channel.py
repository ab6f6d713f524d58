"""One playback source as the mixer sees it: its request fields, its state, its report.

Each :class:`SourceChannel` owns one :class:`~huxleyd.audio.ring.SampleRing`
and three gain stages, multiplied together per sample by the C mixer core
(``csrc/_mixcore.c``):

- **user gain** (``set_gain``), ramped over one period;
- **duck gain**, moving linearly in dB at ``depth / attack`` going down and
  ``depth / release`` coming back (defaults −12 dB, 80 ms, 600 ms);
- **transport gain** for pause, resume and flush: a ramp of ``ramp_ms``
  (≥ 5 ms) so that a cut never clicks.

Control from asyncio is by *request fields*: the asyncio side stores a new
value (one atomic attribute store), the mixer notices at the next period and
ramps to it. Nothing here blocks or takes a lock. The arithmetic is not here:
whoever mixes (the C feeder, or :class:`~huxleyd.audio.mixer.Mixer` through
``_dsp.mix_period``) runs the core on these fields, packed into the core's
struct (:mod:`huxleyd.audio.corestate`), and writes them back.
"""

from __future__ import annotations

from huxleyd.audio.doorbell import Doorbell, Request
from huxleyd.audio.playout import SourcePlayout
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SourceName


class SourceChannel:
    """One playback source as the audio thread sees it.

    Request fields (``req_*``) are written by asyncio only; the rest by the
    mixer only. After each period :attr:`pull_start`, :attr:`pull_offset`
    and :attr:`pull_count` say which ring samples went where in the period
    (the playout clock records them). :attr:`playout` is the source's playout
    accounting (:mod:`huxleyd.audio.playout`); a flush records its cut there.
    """

    req_paused = Request[bool]()
    req_ducked = Request[bool]()
    req_gain = Request[float]()
    req_flush_seq = Request[int]()
    """Bumped after ``req_flush_to``, which it publishes."""

    def __init__(
        self,
        name: SourceName,
        ring: SampleRing,
        *,
        period_samples: int,
        ramp_samples: int,
        duck_depth_db: float,
        duck_attack_ms: float,
        duck_release_ms: float,
        period_ms: float,
        doorbell: Doorbell | None = None,
    ) -> None:
        self.name = name
        self.ring = ring
        self.doorbell = doorbell or Doorbell()
        self.playout = SourcePlayout()
        # requests from asyncio (each store rings the doorbell: see Request)
        self._req_paused = False
        self._req_ducked = False
        self._req_gain = 1.0
        self._req_flush_seq = 0
        self.req_flush_to = 0
        """Where a flush drops to; written before ``req_flush_seq``, which publishes it."""
        # the mixer's state
        self._period = period_samples
        self._ramp = max(1, min(ramp_samples, period_samples))
        self._paused = False
        self._flush_seq = 0
        self._gain = 1.0
        self._duck_db = 0.0
        self._depth_db = duck_depth_db
        self._attack_step_db = abs(duck_depth_db) * period_ms / duck_attack_ms
        self._release_step_db = abs(duck_depth_db) * period_ms / duck_release_ms
        self._flowing = False
        # published by the mixer
        self.pull_start = 0
        self.pull_offset = 0
        self.pull_count = 0
        self.dry_count = 0
        """Times the source ran out mid-period after a full period."""
        self.skip_from = 0
        self.skip_to = 0
        """What a flush this period dropped: ring positions [skip_from, skip_to)."""

    @property
    def paused(self) -> bool:
        """True once a pause request has ramped down (the mixer's view)."""
        return self._paused

    @property
    def duck_db(self) -> float:
        """The duck gain now, in dB (0 when not ducked)."""
        return self._duck_db

    def idle(self) -> bool:
        """Nothing to play and nothing moving: mixing would add zeros and change nothing."""
        if self.req_flush_seq != self._flush_seq or self.req_paused != self._paused:
            return False
        if self._gain != self.req_gain:
            return False
        if self._duck_db != (self._depth_db if self.req_ducked else 0.0):
            return False
        return self._paused or self.ring.available() == 0

    def skip_idle(self) -> None:
        """What mixing an idle period would have done to the report, minus the arithmetic."""
        self.pull_start = self.ring.read_pos
        self.pull_offset = 0
        self.pull_count = 0
        self.skip_from = self.skip_to = 0
        if not self._paused:
            if self._flowing:  # ran dry after a full period: the same gap the core counts
                self.dry_count += 1
            self._flowing = False
