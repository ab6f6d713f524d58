"""The audio thread: the one loop that owns the sound device and runs per period.

There is one mixer, the C core (``csrc/_mixcore.c``); the backend decides who drives it.

**On the card** (the callback backend, what the daemon runs on a speaker): the
speaker is not this thread's. C callbacks play and capture (``csrc/_rtout.c``,
``csrc/_rtin.c``) and the C feeder (:mod:`.fed`, ``csrc/_feedthread.c``) runs the
mixer core on the four sources, holds each reply's start in its playout buffer,
resamples and fills the speaker's ring, all without the GIL. Each period
(``audio.period_ms``, 20 ms) :meth:`AudioThread.cycle` then

1. reads the mic periods the capture callback queued, resamples them to the
   capture rate (24 kHz, or 16 kHz when a provider asks) and pushes them, with
   their capture time, into the capture ring (:mod:`.mic_feed`);
2. drains the feeder's reports (:meth:`~.fed.FedOutput.drain`) into the playout
   clock, the meters and the sources' published fields, and the callback's DAC
   stamps into ``played_pos``;
3. updates the counters (the silences by cause among them), watches the card's
   xruns for the period ladder (:class:`~.xrun_watch.PeriodLadder`: wider after
   repeated xruns, narrower after a calm stretch) and wakes asyncio waiters that asked.

Idle (nothing queued, nothing heard pending, nobody listening to the mic) it
sleeps on the mixer's doorbell (:mod:`.idle`).

**On WAV files** (``make run``, the tests), **and while a device is lost**: step 2
is this thread's own. :meth:`~.mixer.Mixer.mix` runs the same C core with the GIL
(``_dsp.mix_period``, on the struct :mod:`.corestate` packs), then the thread
resamples to the device rate and writes the file (or nothing, lost). There is no
playout buffer there: a file is never late. Where the card's feeder could not
start (the device's description says why; the engine's ``feeder=False`` does so
to compare), this thread writes the callback's ring the same way,
``output_lead_ms`` ahead (:meth:`AudioThread._play_timed`). A build without the C
mix opens no device and says why (:data:`~.mixer.NOT_BUILT`): there is no second
mixer.

It knows nothing of :class:`~huxleyd.audio.engine.AudioEngine`, the facade asyncio
calls: the engine builds the shared parts and passes them in, named
(:mod:`.thread_parts`): the platform (backend, kernel), the speaker side (mixer,
playout clock, sources, output meter, feeder), the mic side (capture ring, its
waker, rate and meter) and the asyncio-side reporters it hands events to.

**The real-time contract** (conventions rule 4, docs/conventions.md), which every line the thread
runs per period follows:

- *No allocation in the steady state.* Every sample buffer is allocated when
  the device opens; the loop works with in-place numpy operations
  (``out=``). The only objects it creates are numpy views, scalars and
  ints, freed at once by reference counting (no cyclic garbage, so the loop
  never triggers the garbage collector), plus the ints and floats the mixer's
  struct packs and unpacks (:mod:`.corestate`), freed likewise.
- *No locks shared with asyncio.* Rings are single-producer/single-consumer
  with one writer per index; controls are request fields stored atomically
  by asyncio and picked up at the next period.
- *No blocking* except on the device itself (or, when nothing paces the
  loop, on the engine clock until the next period; or, idle, on the doorbell).
- *No logging.* Events for asyncio (a waiter to wake, a device state to
  report, a fault, a crash) go through ``loop.call_soon_threadsafe``, only
  when someone waits for them — never per sample, at most a few per period.
- *Always a full output buffer*: silence when nothing plays, and when a
  source runs dry mid-period the rest of its period is zeros.
- *Everything is counted*: device underruns and overruns, late periods,
  dropped mic frames, and gaps inside items (a source ran dry, then its
  item continued).
- *No new attribute hops or calls on the hot path*: per-period code reads
  its own fields directly; what it needs from elsewhere is bound once here.

**What the thread writes** (asyncio only reads them): ``device_state``,
``device_format``, the counters ``periods``, ``underruns``, ``overruns``,
``late``, ``faults``, ``last_fault``, ``cycles`` and ``crash`` (the mic
feed's ``caught_up``, the ladder's steps and silences); plus the capture ring's write side, the sources' read sides (via
the mixer), the meters and the playout clock's periods.

**What it reads from asyncio** (request fields, picked up next period):
the mic feed's ``req_capture_rate`` and ``req_capture_active``, the mixer's ``req_*`` fields
(gain, duck, pause, flush, the earcon gate), the timed output's pending cut,
and the stop event; the mixer's doorbell wakes it from the idle sleep.

Where this thread writes the callback's ring (the feeder could not start), it
mixes as many periods as the lead needs (after idle: at once). Whoever drives the
mix, a source's flush on the card is also a cut the callback honours in its next
short period (``played_ms`` answers at the fade's end at once).

**The idle path**: when no source has audio and no ramp runs (and did not
last period either), a period is only the mixer's bookkeeping: nothing is
mixed or resampled, a prebuilt zero buffer is written (nothing at all with
the callback backend), and the unheard mic is only primed. With the callback
backend, once all that was written has been heard and nobody listens to the
mic, the thread sleeps until asyncio asks for something (:mod:`.idle`).

**Late periods**: with the C capture ring a late cycle takes every whole mic
period already captured, not one, and the period's arithmetic is the C
kernel's (:mod:`.dsp`), which never releases the GIL: a busy Python thread
costs a bounded number of GIL hand-offs per cycle, however late it runs.

Device state changes (open, reopen, lose, fault, and a reopen at a longer
period when the card xruns again and again: :mod:`.xrun_watch`) happen in the
thread or in the engine's ``start()``/``step()``, never per period of a healthy
device.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import Any

import numpy as np

from huxleyd.audio.backends.base import (
    AudioBackend,
    DeviceFormat,
    FeedableOutput,
    IoStatus,
    OutputClock,
    WidenablePeriod,
)
from huxleyd.audio.chains import CaptureChain, PlaybackChain
from huxleyd.audio.fed import FedOutput
from huxleyd.audio.idle import IdleSleeper
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mic_feed import MicFeed
from huxleyd.audio.mixer import NOT_BUILT
from huxleyd.audio.pacing import pacer_for
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import FrameRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.thread_parts import MicSide, Platform, Reporter, Reporters, SpeakerSide
from huxleyd.audio.timed import TimedOutput, lead_s
from huxleyd.audio.types import DeviceState
from huxleyd.audio.xrun_watch import PeriodLadder
from huxleyd.clock import Clock
from huxleyd.errors import AudioDeviceError, AudioError
from huxleyd.pcm import RATE_HZ, float_to_int16_into, period_frames


class AudioThread:
    """The device and the per-period loop; :meth:`start` runs it in its own thread.

    :meth:`cycle` runs one period in the caller's thread instead (the engine's
    ``step()``, for deterministic tests and benchmarks).
    """

    def __init__(
        self,
        platform: Platform,
        *,
        settings: AudioSettings,
        clock: Clock,
        speaker: SpeakerSide,
        mic: MicSide,
        reporters: Reporters,
    ) -> None:
        # each part's fields bound once, here: the per-period code reads its own
        # attributes, never through a part (no new hops on the hot path)
        backend = self._backend = platform.backend
        self._kernel, self._idle_path = platform.kernel, platform.idle_path
        self.fed = speaker.fed
        """The C feeder (:attr:`.SpeakerSide.fed`); None: this thread runs the mix."""
        self._mixer, self._playout, self._sources = speaker.mixer, speaker.playout, speaker.sources
        self._in_meter, self._out_meter = mic.meter, speaker.meter
        self._settings, self._clock, self._pace = settings, clock, pacer_for(clock)
        self._on_state, self._on_fault = reporters.on_state, reporters.on_fault
        self._on_crash = reporters.on_crash
        self._period_s = settings.period_ms / 1000.0
        self._silent_mix = np.zeros(period_frames(RATE_HZ, settings.period_ms), dtype=np.float32)
        """What the mixer plays into while the device is lost (to nowhere)."""
        self.far_end: FrameRing | None = None
        """The echo canceller's far end, when the engine was asked for it: each
        period's mix (PCM16, 24 kHz) stamped with when it reaches the DAC."""
        self._far_pcm = np.zeros(len(self._silent_mix), dtype=np.int16)
        self._far_scratch = np.zeros(len(self._silent_mix), dtype=np.float32)
        self.mic = MicFeed(
            backend,
            settings=settings,
            clock=clock,
            capture=mic.capture,
            waker=mic.waker,
            capture_rate_hz=mic.rate_hz,
        )
        """The mic's periods into the capture ring (asyncio sets its request fields)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop events are handed to (bound by the engine)."""
        self.thread: threading.Thread | None = None
        """The OS thread once :meth:`start` ran (``step()`` refuses to run beside it)."""
        self._stopping = threading.Event()
        self._init_state()
        self.timed = self._timed_output(backend, speaker.playout, speaker.fed)
        """Cuts and the DAC clock, when the backend has them (the C callback backend)."""
        self._sleeper = self._idle_sleeper(backend, (mic.meter, speaker.meter))
        """Sleeps the thread while idle (only where C callbacks keep the card going)."""
        self.ladder = PeriodLadder(backend if isinstance(backend, WidenablePeriod) else None)
        """The period ladder (:mod:`.xrun_watch`): its steps and the silences they made."""

    def _init_state(self) -> None:
        """The device's state and the counters: the thread writes them, asyncio reads."""
        self.device_state = DeviceState.CLOSED
        self.device_format: DeviceFormat | None = None
        self._capture_chain: CaptureChain | None = None
        self._playback_chain: PlaybackChain | None = None
        self._reopen_at = 0.0
        self.crash: BaseException | None = None
        """The exception that stopped the thread, if one did."""
        self.periods = 0
        self.underruns = 0
        self.overruns = 0
        self.late = 0
        self.faults = 0
        self.last_fault: str | None = None
        self.open_error: str | None = None
        """Why the last open failed; None once open (doctor, the ``speaker`` part)."""
        self.cycles = 0
        """Times the thread ran a cycle (one per period, fewer while it sleeps idle)."""
        self._idle_streak = 0

    @staticmethod
    def _timed_output(
        backend: AudioBackend, playout: PlayoutClock, fed: FedOutput | None
    ) -> TimedOutput | None:
        if not isinstance(backend, OutputClock):
            return None
        timed = TimedOutput(backend, playout)
        if fed is not None:  # a cut sees the feeder's undrained reports
            timed.unrecorded = fed.pending
        return timed

    def _idle_sleeper(
        self, backend: AudioBackend, meters: tuple[LevelMeter, LevelMeter]
    ) -> IdleSleeper | None:
        queued = self.mic.queued
        if queued is None or self.timed is None or not self._idle_path:
            return None
        period_s, doorbell = self._period_s, self._mixer.doorbell
        return IdleSleeper(
            doorbell, backend, queued, clock=self._clock, period_s=period_s, meters=meters
        )

    # -- lifecycle (called by the engine, not per period) -------------------------

    @property
    def running(self) -> bool:
        thread = self.thread
        return thread is not None and thread.is_alive()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="huxleyd-audio", daemon=True)
        self.thread.start()

    def stop(self, timeout_s: float) -> bool:
        """Stop and join the thread (or close the device if it never ran); False if stuck."""
        self._stopping.set()
        self._mixer.doorbell.ring()  # an idle thread sleeps on it
        thread = self.thread
        if thread is None:
            self._close_backend()
            return True
        thread.join(timeout_s)
        return not thread.is_alive()

    # -- the loop ------------------------------------------------------------

    def _run(self) -> None:
        stopping, clock, period_s = self._stopping, self._clock, self._period_s
        deadline = clock.monotonic()
        try:
            while not stopping.is_set():
                started = clock.monotonic()
                self.cycles += 1
                try:
                    self.cycle()
                except Exception as exc:  # a device or backend fault: recover, never die
                    self._fault(exc)
                fmt = self.device_format
                if self._may_sleep() and self._sleep_idle():
                    deadline = clock.monotonic()
                    continue
                if self.device_state is DeviceState.OPEN and fmt is not None and fmt.paced:
                    if started - deadline > 1.5 * period_s:
                        self.late += 1
                    deadline = started
                    continue
                deadline += period_s
                now = clock.monotonic()
                if now - deadline > period_s:
                    self.late += 1
                    deadline = now  # re-anchor rather than burst to catch up
                self._pace(deadline, stopping)
        except BaseException as exc:  # handed to asyncio, which logs it
            self.crash = exc
            self._hand_off(self._on_crash, exc)
        finally:
            self._close_backend()

    def _may_sleep(self) -> bool:
        """Nothing for the thread to do until asyncio asks (see :mod:`.idle`)."""
        timed = self.timed
        return (
            self._sleeper is not None
            and timed is not None
            and self._idle_streak > 1
            and not self.mic.req_capture_active
            and self.device_state is DeviceState.OPEN
            and (
                self.fed.idle() if self.fed is not None and self.fed.running else self._mixer.idle()
            )
            and timed.settled()
        )

    def _sleep_idle(self) -> bool:
        """Sleep until rung (or housekeeping); then catch the mic up. True if slept."""
        sleeper, capture = self._sleeper, self._capture_chain
        if sleeper is None or capture is None:
            return False
        periods = sleeper.sleep(self._may_sleep, self._stopping)
        if periods is None:
            return False
        self.periods += periods  # the card's periods went on meanwhile
        sleeper.resync(capture, self.mic.req_capture_rate)
        return True

    def cycle(self) -> None:
        """One period, reopening a lost device first when its retry is due."""
        if self.device_state is not DeviceState.OPEN and self._clock.monotonic() >= self._reopen_at:
            self._try_reopen()
        self._period()

    def _period(self) -> None:
        open_ = self.device_state is DeviceState.OPEN
        capture, playback = self._capture_chain, self._playback_chain
        if open_ and capture is not None:
            status = self._backend.read(capture.buffer)
            if status is IoStatus.LOST:
                self._lose()
                open_ = False
            else:
                if status is IoStatus.XRUN:
                    self.overruns += 1
                fmt = self.device_format
                self.mic.push(capture, fmt)
                self.mic.catch_up(capture, fmt)
        fed = self.fed
        if open_ and self.timed is not None and fed is not None and fed.running:
            self._play_fed(self.timed, fed)
        elif open_ and playback is not None and self.timed is not None:
            self._play_timed(self.timed, playback)
        else:
            self._play(playback if open_ else None)
        self.periods += 1
        self._wake_waiters()
        ladder = self.ladder
        if open_ and ladder.widenable is not None:
            due = ladder.due(self._clock.monotonic())
            if due is not None and (due or self._speaker_idle()) and ladder.step(wider=due):
                self._step_reopen(wider=due)

    def _speaker_idle(self) -> bool:
        """No source has audio queued (whoever mixes): a reopen now is heard by nobody."""
        fed = self.fed
        return fed.idle() if fed is not None and fed.running else self._mixer.idle()

    def _idle_period(self) -> bool:
        """True when this period can take the idle path: the mixer is idle and was
        already idle last period (so the output resampler's history is zeros too)."""
        if not self._idle_path or not self._mixer.idle():
            self._idle_streak = 0
            return False
        self._idle_streak += 1
        return self._idle_streak > 1

    def _play(self, playback: PlaybackChain | None) -> None:
        """One period to a device paced by its blocking write (or to nowhere)."""
        if playback is None:
            if self._mixer.can_mix:  # a build without the C mix plays nothing (open says so)
                self._mixer.mix(self._silent_mix)
        elif self._idle_period():
            self._mixer.skip_idle()
            self._out_meter.update_silent()
            self._write(playback.silence)
        else:
            self._mixer.mix(playback.mix)
            self._write(playback.process())
            if self.far_end is not None and self.device_format is not None:
                latency = self.device_format.output_latency_s
                self._tap_far_end(playback.mix, self._clock.monotonic() + latency)
        self._playout.record_period()

    def _tap_far_end(self, mix: np.ndarray[Any, Any], dac_at: float) -> None:
        """Hand the period's mix and its DAC time to the echo canceller (no allocation)."""
        ring = self.far_end
        if ring is None:
            return
        float_to_int16_into(mix, self._far_pcm, self._far_scratch)
        ring.push(self._far_pcm, rate_hz=RATE_HZ, captured_at=dac_at)

    def _write(self, data: np.ndarray[Any, Any]) -> None:
        status = self._backend.write(data)
        if status is IoStatus.XRUN:
            self.underruns += 1
        elif status is IoStatus.LOST:
            self._lose()

    def _play_timed(self, timed: TimedOutput, playback: PlaybackChain) -> None:
        """Mix into the C callback's ring, ``lead`` ahead of the DAC; nothing when idle."""
        seq = timed.pending_cut()
        for _ in range(4):  # this period, plus catching up to the lead after idle
            if self._idle_period():
                self._mixer.skip_idle()
                self._out_meter.update_silent()
                self._playout.record_period(-1)
                idle = True
            else:
                self._mixer.mix(playback.mix)
                # recorded before the write, so a flush from asyncio always finds
                # the period whose frames its fade may end in
                start = timed.out.written_frames()
                self._playout.record_period(start)
                self._write(playback.process())
                idle = False
                if self.far_end is not None and self.device_format is not None:
                    # the DAC clock: the frame the callback's stamps say is heard now
                    ahead = (start - timed.out.heard_frame()) / self.device_format.output_rate_hz
                    self._tap_far_end(playback.mix, self._clock.monotonic() + ahead)
            timed.acknowledge(seq)
            if idle or self.device_state is not DeviceState.OPEN or timed.lead_reached():
                break
        # a source still holding audio means the callback's ring must not run dry
        timed.out.expect_audio(self._mixer.holding())
        timed.publish()

    def _play_fed(self, timed: TimedOutput, fed: FedOutput) -> None:
        """The C feeder mixes: take its reports (playout clock, meter, echo canceller's
        far end), publish what reached the DAC. A dead stream is a lost device."""
        if not fed.alive():
            self._lose()
            return
        far = None
        fmt = self.device_format
        if self.far_end is not None and fmt is not None:
            heard = timed.out.heard_frame()
            far = (self.far_end, self._clock.monotonic(), heard, fmt.output_rate_hz)
        fed.drain(far)
        timed.acknowledged(fed.acked())
        timed.publish()
        self._idle_streak = self._idle_streak + 1 if fed.idle() else 0

    def _wake_waiters(self) -> None:
        fed = self.fed
        pulled = fed.pulled if fed is not None and fed.running else None
        for name, source in self._sources.items():
            channel = source.channel
            if channel.pull_count or (pulled is not None and pulled[name]):
                source.room.notify()
            if channel.playout.wake_due():
                source.progress.notify()

    # -- device state (thread or the engine's start()/step(); never per period) ----

    def open_device(self) -> None:
        """Open the backend and build the chains; raise AudioDeviceError if unusable."""
        if not self._mixer.can_mix:  # no second mixer: the device stays closed, retried
            raise AudioDeviceError(NOT_BUILT)
        fmt = self._backend.open(period_ms=self._settings.period_ms)
        try:
            capture = CaptureChain(
                fmt,
                period_ms=self._settings.period_ms,
                mic_channel=self._settings.mic_channel,
                meter=self._in_meter,
                kernel=self._kernel,
            )
            playback = PlaybackChain(
                fmt, period_ms=self._settings.period_ms, meter=self._out_meter, kernel=self._kernel
            )
        except (ValueError, AudioError) as exc:
            self._close_backend()
            raise AudioDeviceError(f"{fmt.description}: unusable format: {exc}") from exc
        self.device_format = fmt
        self._capture_chain = capture
        self._playback_chain = playback
        self._playout.latency_samples = (
            round(fmt.output_latency_s * RATE_HZ) + playback.delay_samples
        )
        if self.timed is not None:  # positions restart at 0 with each open
            self.timed.opened(
                frames=playback.buffer.shape[0],
                delay_frames=round(playback.delay_samples * fmt.output_rate_hz / RATE_HZ),
                lead_frames=round(lead_s(self._settings, fmt) * fmt.output_rate_hz),
            )
            self._idle_streak = 0
            self._start_feeder(fmt, playback)
        self.open_error = None
        self._set_state(DeviceState.OPEN)

    def _start_feeder(self, fmt: DeviceFormat, playback: PlaybackChain) -> None:
        """Hand the mix to the C feeder; the device's description (log, status,
        doctor) says who mixes, and why not the feeder."""
        fed, timed = self.fed, self.timed
        if fed is None or timed is None or not isinstance(self._backend, FeedableOutput):
            return
        started = fed.start(
            self._backend.output_stream(),
            playback,
            rate_hz=fmt.output_rate_hz,
            lead_frames=timed.lead_frames,
        )
        mix = fed.who_mixes(started)
        self.device_format = replace(fmt, description=f"{fmt.description}; {mix}")

    def retry_later(self) -> None:
        """The device is lost: play to nowhere, try again after ``reopen_interval_s``."""
        self._set_state(DeviceState.LOST)
        self._reopen_at = self._clock.monotonic() + self._settings.reopen_interval_s

    def _try_reopen(self) -> None:
        self._set_state(DeviceState.REOPENING)
        self._close_backend()
        try:
            self.open_device()
        except AudioDeviceError as exc:
            self.open_error = str(exc)
            self.retry_later()

    def _step_reopen(self, *, wider: bool) -> None:
        """Reopen at the ladder's new period; a reopen while a source had audio queued
        is a silence the listener heard: the ladder counts it, with its length."""
        playing = not self._speaker_idle()
        started = self._clock.monotonic()
        self._keep_counts()
        self._try_reopen()
        now = self._clock.monotonic()
        fmt = self.device_format
        heard = now - started + (fmt.output_latency_s if fmt else 0.0) if playing else None
        self.ladder.reopened(now, wider=wider, heard_s=heard)

    def _fault(self, exc: Exception) -> None:
        """A period raised (a write error on the speaker, a backend bug): close the
        device, report, and reopen it after ``reopen_interval_s`` like a lost one.

        The thread itself stays alive, so turns never stick waiting on audio that
        will not move; the fault is counted in the engine's stats for status and doctor.
        """
        self.faults += 1
        self.last_fault = repr(exc)
        self._hand_off(self._on_fault, exc)
        try:
            self._lose()
        except Exception as close_exc:  # the device is already broken: only log it
            self._hand_off(self._on_fault, close_exc)
            self.retry_later()

    def _lose(self) -> None:
        self._keep_counts()
        self._close_backend()
        self.retry_later()

    def _keep_counts(self) -> None:
        """Keep the open device's counters (the timed output's) before a close resets them."""
        if self.timed is not None and self.device_state is DeviceState.OPEN:
            self.timed.keep_counts()

    def _close_backend(self) -> None:
        """Close the device; the C feeder first (it writes the device's ring), handing
        the mix back to this thread."""
        if self.fed is not None:
            self.fed.stop()
        self._backend.close()

    def _set_state(self, state: DeviceState) -> None:
        if state is self.device_state:
            return
        self.device_state = state
        self._hand_off(self._on_state, state)

    def _hand_off(self, callback: Reporter, arg: object) -> None:
        loop = self.loop
        if loop is None:
            return
        if threading.current_thread() is not self.thread:
            callback(arg)
            return
        try:  # noqa: SIM105 - no context-manager object in the audio thread
            loop.call_soon_threadsafe(callback, arg)
        except RuntimeError:  # loop closed: nobody left to tell
            pass
