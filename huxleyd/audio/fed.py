"""The speaker path in C on the card (the C feeder): the audio thread's side of it.

With the callback backend the speaker's deadline is already a C callback's; what
fed its ring was the Python audio thread, mixing ``output_lead_ms`` ahead, so a
Python thread holding the GIL for longer than the lead starved the speaker.
:class:`FedOutput` hands the whole mix to the C feeder (``_feedthread.c``): a pthread
that mixes the four sources (the same mixer core as :class:`~.mixer.Mixer`),
resamples, converts and writes the callback's ring without the GIL, from source
rings that live in C (:class:`~.ring.SharedSampleRing`, seconds deep). A busy
Python thread then delays only the writers of those rings, seconds ahead.

What stays in Python, and how it reaches the feeder:

- **requests** (gain, duck, pause, flush, master gain, earcon gate) stay the
  Mixer's request fields; every store rings the mixer's doorbell, whose
  ``on_ring`` hook publishes a snapshot of them (:meth:`~.mixer.Mixer.core_state`,
  the core's struct :mod:`~huxleyd.audio.corestate` packs) into the feeder's seqlock, from the
  thread that made the request (asyncio). The feeder takes it once a period.
- **cuts** (barge-in) are the callback's, as on the Python path; the feeder
  acknowledges them itself after the mix that took the flush in.
- **reports**: the feeder logs each mixed period (which ring samples of each
  source went where, what a flush dropped, the dry counts, the meter, the mix
  as PCM16 for the echo canceller, and the device frame it was written at)
  before it writes the period to the speaker's ring;
  :meth:`FedOutput.drain` (the audio thread, each cycle) feeds them to the
  channels' published fields and the playout clock, so truncation, bookmarks
  and EngineStats are exact as before. A report leaves the log only once it
  is recorded, so a cut (asyncio) answers from the playout clock's history
  plus :meth:`FedOutput.pending`: every period the callback may have played,
  drained or not.

The mixer's state (gains, ramps, limiter) moves into the feeder when the device
opens and back (:meth:`~.mixer.Mixer.restore_core_state`) when it closes, so the
audio thread mixes on (the same core, to nowhere) from where the feeder stopped while
the device is lost.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from huxleyd.audio.backends.base import FeedableOutput
from huxleyd.audio.backends.callback_backend import RtTypes, load_rt
from huxleyd.audio.chains import PlaybackChain
from huxleyd.audio.channel import SourceChannel
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.playout import PeriodPulls, PlayoutClock
from huxleyd.audio.ring import FrameRing, SharedSampleRing
from huxleyd.audio.types import SOURCES
from huxleyd.pcm import RATE_HZ

if TYPE_CHECKING:
    from huxleyd.audio import _rt

REPORT_SLOTS = 1024
"""Periods the report log holds (20 s of 20 ms periods): how long the audio thread
may stall before the playout clock misses a period (counted, never waited for)."""


HOLD_START_MS, HOLD_MIN_MS, HOLD_MAX_MS = 300, 40, 500
"""The playout buffer's target (``_feedthread.c``'s hold_step): where it starts, its
floor and its ceiling. It starts high enough to ride the event-loop stalls a busy
Python thread causes at a Pi 4's CPU share (100-211 ms measured between two deltas,
268 ms at the first reply after the start);
a provider streams a reply ahead of real time, so on a calm machine the target fills
within a few ms of the first delta, and a reply whose end was written plays at once."""
HOLD_CALM_MS = 60_000
"""The target shrinks by at most a quarter per minute of watched feed without a hole (a
late source), and never under 1.5 times the deepest dip of a playing reply's queue in
that minute (the margin it used; ``feeder_hold_shrunk``). Watched feed is time while a
reply plays with more of it still to come, not the wall clock: a busy spell (a skill's
work, a slow loop) lasts seconds, so the replies right after it keep the margin that
covered it, and a speaker quiet for an hour has learnt nothing about its feed. From the
ceiling to the floor takes about seven such minutes."""
HOLD_SOURCES = ("speech", "content")
"""Whose starts are held: model speech and media. Earcons are written whole, and
call audio (comms) is live: holding it would only add latency."""


def feeder_module(backend: object, kernel: ModuleType | None) -> RtTypes | None:
    """The C extension to feed the speaker with, or None: the audio thread runs the
    mix then (the WAV backend).

    The feeder needs a backend whose speaker is the C callback
    (:class:`~.backends.base.FeedableOutput`) and both C extensions built."""
    if kernel is None or not isinstance(backend, FeedableOutput):
        return None
    try:
        return load_rt()
    except ImportError:
        return None


class FedOutput:
    """The C feeder of one engine: started per device open, drained per cycle."""

    def __init__(
        self,
        rtout: RtTypes,
        kernel: ModuleType,
        mixer: Mixer,
        playout: PlayoutClock,
        out_meter: LevelMeter,
    ) -> None:
        self._rt = rtout
        self._kernel = kernel
        self._mixer = mixer
        self._playout = playout
        self._meter = out_meter
        channels = tuple(mixer.channels[name] for name in kernel.SOURCE_ORDER)
        self._channels: tuple[SourceChannel, ...] = channels
        rings = [channel.ring for channel in channels]
        self._rings = tuple(ring.shared for ring in rings if isinstance(ring, SharedSampleRing))
        if len(self._rings) != len(channels):
            raise ValueError("the C feeder needs every source ring in C (SharedSampleRing)")
        self._bits = tuple(SOURCES.index(name) for name in kernel.SOURCE_ORDER)
        head, per_source = rtout.REPORT_HEAD, rtout.REPORT_SOURCE
        self._fields = np.zeros(len(head) + len(per_source) * len(channels), dtype=np.float64)
        self._at = {name: i for i, name in enumerate(head)}
        self._src_at = {name: len(head) + k * len(channels) for k, name in enumerate(per_source)}
        self._pcm = np.zeros(mixer.period_samples, dtype=np.int16)
        # the playout clock lists sources in its own order: where each is in ours
        ours = {id(channel): i for i, channel in enumerate(channels)}
        self._clock_order = tuple(ours[id(channel)] for channel in playout.channels)
        self._feeder: _rt.Feeder | None = None
        self.error: str | None = None
        """Why the feeder could not start on the last open (the audio thread then ran
        the same C mix into the callback's ring)."""
        self.pulled = {channel.name: False for channel in channels}
        """Per source: did any period the last :meth:`drain` took pull its samples."""
        self._output: _rt.Output | None = None
        self._late_before = (0, 0.0)
        """Late-source silences (count, ms) of the feeders already stopped."""

    @property
    def running(self) -> bool:
        return self._feeder is not None

    def start(self, output: Any, chain: PlaybackChain, *, rate_hz: int, lead_frames: int) -> bool:
        """Hand the mix to a new feeder on ``output`` (an open ``_rt.Output``).
        False (and :attr:`error` says why) when it cannot: the audio thread runs the
        mix instead."""
        mixer = self._mixer
        fade_out, fade_in, unit = mixer.fades
        state = chain.resampler_state()
        taps, ext = (None, None) if state is None else (state[1], state[0].copy())
        up, down = chain.resampler_ratio()
        try:
            feeder = self._rt.Feeder(
                output=output,
                rings=self._rings,
                expect_bits=self._bits,
                state=mixer.core_state(),
                shapes=(unit, fade_out, fade_in, mixer.limiter.attack),
                taps=taps,
                ext=ext,
                up=up,
                down=down,
                frames=chain.buffer.shape[0],
                rate_hz=rate_hz,
                lead_frames=lead_frames,
                report_slots=REPORT_SLOTS,
                hold=(
                    HOLD_START_MS,
                    HOLD_MIN_MS,
                    HOLD_MAX_MS,
                    HOLD_CALM_MS,
                    sum(
                        1 << i
                        for i, name in enumerate(self._kernel.SOURCE_ORDER)
                        if name in HOLD_SOURCES
                    ),
                ),
            )
            feeder.start()
        except (OSError, ValueError, TypeError) as exc:
            self.error = str(exc)
            return False
        self.error = None
        self._feeder = feeder
        self._output = output
        mixer.doorbell.on_ring = self.publish
        return True

    def who_mixes(self, started: bool) -> str:
        """Who mixes the speaker after :meth:`start` returned ``started``, and why not
        the feeder: for the device's description (log, status, doctor)."""
        if started:
            return "mixed by the C feeder"
        return f"mixed by the audio thread, the C feeder failed: {self.error}"

    def stop(self) -> None:
        """Join the feeder, take its last reports and hand the mix back to Python."""
        feeder = self._feeder
        if feeder is None:
            return
        self._mixer.doorbell.on_ring = None
        state = feeder.stop()
        self._late_before = self.late_sources()
        self.drain(None)
        self._feeder = self._output = None
        self._mixer.restore_core_state(state)

    def publish(self) -> None:
        """A request was stored (any thread, GIL held): the feeder takes it next period."""
        feeder = self._feeder
        if feeder is not None:
            feeder.request(self._mixer.core_state())

    def alive(self) -> bool:
        """The speaker's stream still runs (PortAudio did not abort it)."""
        output = self._output
        return output is not None and bool(output.active())

    def wake(self) -> None:
        """A cut was asked (asyncio): the feeder mixes the flush and acknowledges it now,
        not at its next wake-up (up to a period later)."""
        feeder = self._feeder
        if feeder is not None:
            feeder.wake()

    def idle(self) -> bool:
        """The feeder has nothing to mix and no cut pending."""
        feeder = self._feeder
        return feeder is not None and bool(feeder.idle())

    def acked(self) -> int:
        feeder = self._feeder
        return int(feeder.acked()) if feeder is not None else 0

    def status(self) -> dict[str, Any]:
        feeder = self._feeder
        return dict(feeder.status()) if feeder is not None else {}

    def late_sources(self) -> tuple[int, float]:
        """(count, ms) of the silences the playout buffer saw since start: a source ran
        dry before its end and went on (its producer was late)."""
        count, ms = self._late_before
        feeder = self._feeder
        if feeder is not None:
            status = feeder.status()
            count += int(status["holes"])
            ms += float(status["hole_ms"])
        return count, ms

    def pending(self) -> list[PeriodPulls]:
        """The periods the feeder logged and :meth:`drain` has not recorded yet,
        oldest first (asyncio, for a cut; may repeat one just recorded)."""
        feeder = self._feeder
        if feeder is None:
            return []
        at, src_at, order = self._at["dev_start"], self._src_at, self._clock_order

        def per_source(values: tuple[float, ...], field: str) -> tuple[int, ...]:
            return tuple(int(values[src_at[field] + i]) for i in order)

        return [
            PeriodPulls(
                int(values[at]),
                per_source(values, "pull_start"),
                per_source(values, "pull_offset"),
                per_source(values, "pull_count"),
            )
            for values in feeder.pending()
        ]

    def drain(self, far_end: tuple[FrameRing, float, int, int] | None) -> int:
        """Take every report the feeder logged (audio thread); return how many.

        ``far_end``: (the echo canceller's ring, the engine clock now, the frame at
        the DAC now, the device rate), to stamp each period's mix with when it
        reaches the DAC."""
        feeder, fields, pcm = self._feeder, self._fields, self._pcm
        if feeder is None:
            return 0
        pulled = self.pulled
        for name in pulled:
            pulled[name] = False
        count = 0
        while feeder.peek(fields, pcm):
            count += 1
            values = fields.tolist()
            dev_start = int(values[self._at["dev_start"]])
            self._take_sources(values)
            self._mixer.limiter.active_periods = int(values[self._at["limiter_active"]])
            self._playout.record_period(dev_start)
            self._meter.record(values[self._at["peak"]], values[self._at["power"]])
            if far_end is not None:
                ring, now, heard, rate = far_end
                ring.push(pcm, rate_hz=RATE_HZ, captured_at=now + (dev_start - heard) / rate)
            feeder.pop()  # recorded: only now may it leave the log (see pending)
        return count

    def _take_sources(self, values: list[float]) -> None:
        at = self._src_at
        pulled = self.pulled
        for i, channel in enumerate(self._channels):
            channel.pull_start = int(values[at["pull_start"] + i])
            channel.pull_offset = int(values[at["pull_offset"] + i])
            count = int(values[at["pull_count"] + i])
            channel.pull_count = count
            if count:
                pulled[channel.name] = True
            channel.dry_count = int(values[at["dry_count"] + i])
            skip_from, skip_to = int(values[at["skip_from"] + i]), int(values[at["skip_to"] + i])
            if skip_to > skip_from:
                channel.skip_from, channel.skip_to = skip_from, skip_to
                channel.playout.skips.record(skip_from, skip_to)
