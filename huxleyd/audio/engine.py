"""The audio engine: one dedicated thread between the sound device and asyncio.

Each period (``audio.period_ms``, 20 ms by default) the thread

1. reads one period from the device, takes the mic channel, resamples it to
   the capture rate (24 kHz, or 16 kHz when a provider asks) and pushes it,
   with its capture time, into the capture ring;
2. pulls the four playback sources, mixes them with their gain ramps
   (ducking, pause, flush), applies the master (software volume) gain and the
   soft limiter, resamples to the device rate and writes the device;
3. records what each source contributed for the playout clock, updates the
   meters and counters, and wakes asyncio waiters that asked to be woken.

**The real-time contract** (STYLE.md rule 4), which every line the thread
runs follows:

- *No allocation in the steady state.* Every sample buffer is allocated when
  the device opens; the loop works with in-place numpy operations
  (``out=``). The only objects it creates are numpy views, scalars and
  ints, freed at once by reference counting (no cyclic garbage, so the loop
  never triggers the garbage collector), plus the ``bytes`` PyAudio's
  blocking ``read`` returns, which is the binding's own and is freed likewise.
- *No locks shared with asyncio.* Rings are single-producer/single-consumer
  with one writer per index; controls are request fields stored atomically
  by asyncio and picked up at the next period.
- *No blocking* except on the device itself (or, when nothing paces the
  loop, on the engine clock until the next period).
- *No logging.* Events for asyncio (a waiter to wake, a device state to
  report) go through ``loop.call_soon_threadsafe``, only when someone
  waits for them — never per sample, at most a few per period.
- *Always a full output buffer*: silence when nothing plays, and when a
  source runs dry mid-period the rest of its period is zeros.
- *Everything is counted*: device underruns and overruns, late periods,
  dropped mic frames, and gaps inside items (a source ran dry, then its
  item continued).

With the callback backend (:mod:`~huxleyd.audio.backends.callback_backend`)
the device's own deadline is not this thread's: C callbacks play from a ring
this thread keeps ``output_lead_ms`` ahead and capture into a ring it reads
with the GIL released. Step 2 then mixes as many periods as the lead needs
(after idle: at once), a source's flush is also a cut the callback honours in
its next short period (``played_ms`` answers at the fade's end at once), and
the playout clock is published from the callback's DAC stamps.

Per-source operations (write, duck, pause, flush, gain, played position,
drain) live on the :class:`~huxleyd.audio.source.PlaybackSource` that
:meth:`AudioEngine.source` returns; the engine keeps what spans sources.

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

Two ways to drive it: :meth:`AudioEngine.start` runs the thread (paced by
the device, or by the engine clock when the backend is not paced: WAV files,
a lost device); :meth:`AudioEngine.step` / :meth:`AudioEngine.run_periods`
run periods synchronously in the caller's thread, for deterministic tests.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from types import ModuleType
from typing import Any

import numpy as np

from huxleyd.audio.backends.base import (
    AudioBackend,
    DeviceFormat,
    IoStatus,
    OutputClock,
    QueuedInput,
)
from huxleyd.audio.chains import CAPTURE_RATES_HZ, CaptureChain, PlaybackChain
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.idle import IdleSleeper
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.pacing import pacer_for
from huxleyd.audio.pcm import RATE_HZ, db_to_gain, ms_to_samples, period_frames
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import AsyncWaker, FrameRing, SampleRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.source import PlaybackSource
from huxleyd.audio.timed import TimedOutput
from huxleyd.audio.types import SOURCES, DeviceState, EngineStats, MicFrame, SourceName
from huxleyd.clock import Clock, MonotonicClock
from huxleyd.errors import AudioDeviceError, AudioError
from huxleyd.logs import get_logger

log = get_logger("huxleyd.audio")

StateListener = Callable[[DeviceState], None]


class EarconHandle:
    """What :meth:`AudioEngine.play_earcon` returns: the earcon is already queued.

    ``await handle`` returns at once (so both call styles work);
    ``await handle.heard()`` waits until the whole earcon reached the speaker.
    """

    def __init__(self, source: PlaybackSource, end_pos: int) -> None:
        self._source = source
        self.end_pos = end_pos

    async def heard(self) -> None:
        await self._source.wait_played(self.end_pos)

    def __await__(self) -> Generator[Any, None, None]:
        return asyncio.sleep(0).__await__()


class AudioEngine:
    """Owns the audio thread, the rings, the mixer and the playout clock.

    Call :meth:`start` once (or drive it with :meth:`step`), :meth:`close`
    at the end. Everything else is called from asyncio.
    """

    def __init__(
        self,
        backend: AudioBackend,
        *,
        settings: AudioSettings,
        clock: Clock | None = None,
        capture_rate_hz: int = RATE_HZ,
        idle_path: bool = True,
        kernel: ModuleType | None = KERNEL,
    ) -> None:
        self._check_capture_rate(capture_rate_hz)
        self._kernel = kernel
        """The C kernel, or None for the numpy path (see :mod:`huxleyd.audio.dsp`)."""
        self._idle_path = idle_path
        """Skip the mixing and resampling of silent periods (off only to compare)."""
        self._backend = backend
        self._settings = settings
        self._clock: Clock = clock or MonotonicClock()
        self._pace = pacer_for(self._clock)
        self.period_ms = settings.period_ms
        self._period_s = settings.period_ms / 1000.0
        self._n = period_frames(RATE_HZ, settings.period_ms)
        self._mixer = self._build_mixer(settings)
        channels = [self._mixer.channels[name] for name in SOURCES]
        self._playout = PlayoutClock(channels, period_samples=self._n)
        self._sources = {
            name: PlaybackSource(
                self._mixer.channels[name], is_closed=self._is_closed, cut_output=self._cut_output
            )
            for name in SOURCES
        }
        slots = settings.capture_ring_ms // settings.period_ms + 2
        self._capture = FrameRing(slots, self._n)
        self._mic_waker = AsyncWaker()
        self._req_capture_rate = capture_rate_hz
        self._capture_active = True
        """Frames reach the capture ring only while someone listens (set by asyncio)."""
        self._in_meter = LevelMeter(self._period_s)
        self._out_meter = LevelMeter(self._period_s)
        self._format: DeviceFormat | None = None
        self._capture_chain: CaptureChain | None = None
        self._playback_chain: PlaybackChain | None = None
        self._silent_mix = np.zeros(self._n, dtype=np.float32)
        """What the mixer plays into while the device is lost (to nowhere)."""
        self.device_state = DeviceState.CLOSED
        self._reopen_at = 0.0
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[StateListener] = []
        self._crash: BaseException | None = None
        self._periods = 0
        self._underruns = 0
        self._overruns = 0
        self._late = 0
        self._faults = 0
        self._last_fault: str | None = None
        timed = backend if isinstance(backend, OutputClock) else None
        self._timed = None if timed is None else TimedOutput(timed, self._playout)
        """Cuts and the DAC clock, when the backend has them (the C callback backend)."""
        queued = backend if isinstance(backend, QueuedInput) else None
        self._queued_input = queued
        """The capture ring a late engine drains (the C capture callback), if any."""
        self._sleeper = (
            None
            if queued is None or self._timed is None or not idle_path
            else IdleSleeper(
                self._mixer.doorbell,
                backend,
                queued,
                clock=self._clock,
                period_s=self._period_s,
                meters=(self._in_meter, self._out_meter),
            )
        )
        """Sleeps the thread while idle (only where C callbacks keep the card going)."""
        self.caught_up = 0
        """Mic periods taken beyond one per cycle: the engine ran late and caught up."""
        self.cycles = 0
        """Times the thread ran a cycle (one per period, fewer while it sleeps idle)."""
        self._idle_streak = 0
        self._catch_up_limit = settings.capture_ring_ms // settings.period_ms + 2

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        """Open the device and start the audio thread.

        A device that will not open is not fatal: the engine starts in
        ``LOST`` state, plays to nowhere and retries every
        ``audio.reopen_interval_s`` (the reason is logged).
        """
        if self._closed:
            raise AudioError("audio engine closed; create a new one")
        if self._thread is not None:
            return
        self._bind_loop()
        if self.device_state is not DeviceState.OPEN:
            try:
                self._open_device()
            except AudioDeviceError as exc:
                log.warning(
                    "audio_device_unavailable",
                    error=str(exc),
                    retry_s=self._settings.reopen_interval_s,
                )
                self._set_state(DeviceState.LOST)
                self._reopen_at = self._clock.monotonic() + self._settings.reopen_interval_s
        self._thread = threading.Thread(target=self._run, name="huxleyd-audio", daemon=True)
        self._thread.start()

    def close(self, *, timeout_s: float = 2.0) -> None:
        """Stop the thread (joined with ``timeout_s``), close the device. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        self._mixer.doorbell.ring()  # an idle thread sleeps on it
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                log.error("audio_thread_stuck", timeout_s=timeout_s)
        else:
            self._backend.close()
        self.device_state = DeviceState.CLOSED
        self._mic_waker.close()
        for source in self._sources.values():
            source.close()

    def step(self) -> None:
        """Run exactly one period now, in the caller's thread (tests, benchmarks)."""
        if self._thread is not None:
            raise AudioError("step() drives the engine by hand; the engine thread is running")
        if self._closed:
            raise AudioError("audio engine closed")
        if self.device_state is DeviceState.CLOSED:
            self._open_device()
        self._cycle()

    def run_periods(self, count: int) -> None:
        """:meth:`step` ``count`` times."""
        for _ in range(count):
            self.step()

    def on_device_state(self, listener: StateListener) -> None:
        """Call ``listener(state)`` on the event loop whenever the device state changes."""
        self._bind_loop()
        self._listeners.append(listener)

    # -- playback ------------------------------------------------------------

    def source(self, name: SourceName) -> PlaybackSource:
        """The port of ``"speech"``, ``"earcon"``, ``"content"`` or ``"comms"``: write,
        control (duck, pause, flush, gain), played position, drain."""
        try:
            return self._sources[name]
        except KeyError:
            raise ValueError(
                f"unknown audio source {name!r}; expected one of {', '.join(SOURCES)}"
            ) from None

    def play_earcon(
        self, pcm: bytes, *, before_speech: bool = True, item_id: str | None = None
    ) -> EarconHandle:
        """Queue an earcon now (PCM16 24 kHz mono); raise AudioError if it does not fit.

        With ``before_speech``, speech that has not started yet waits until
        the earcon has played and then starts on the very next sample.
        """
        earcon = self._sources["earcon"]
        earcon.write_nowait(pcm, item_id=item_id)
        end = earcon.write_pos
        if before_speech:
            seq = self._mixer.req_gate[0] + 1
            self._mixer.req_gate = (seq, end, self._sources["speech"].write_pos)
        return EarconHandle(earcon, end)

    def set_master_gain(self, gain: float) -> None:
        """The software volume stage (linear, ramped over one period)."""
        self._mixer.req_master_gain = max(0.0, gain)

    # -- capture -------------------------------------------------------------

    async def read_mic(self) -> MicFrame:
        """The next mic frame (one period at the capture rate), waiting if needed."""
        ring = self._capture
        while True:
            frame = ring.pop()
            if frame is not None:
                return frame
            if self._is_closed():
                raise AudioError(f"audio engine {self._ended()}: no more mic frames")
            await self._mic_waker.wait_for(
                lambda: ring.write_count > ring.read_count or self._is_closed()
            )

    def read_mic_nowait(self) -> MicFrame | None:
        return self._capture.pop()

    def mic_high_water_frames(self) -> int:
        """The most mic frames found waiting; at ``capture_ring_ms`` the oldest are dropped."""
        return self._capture.high_water

    def set_capture_active(self, active: bool) -> None:
        """Queue mic frames for asyncio (PTT held, a claim) or not (idle: no wake-ups).

        While inactive the device is still read (levels keep moving) but no
        frame is queued, so none is dropped or counted as lost either.
        """
        self._capture_active = active
        self._mixer.doorbell.ring()  # an idle thread that slept must read again

    def drain_mic(self) -> int:
        """Discard queued mic frames (PTT press: old audio must not be sent); return how many."""
        return self._capture.clear()

    def set_capture_rate(self, rate_hz: int) -> None:
        """Deliver mic frames at ``rate_hz`` (24000 or 16000) from the next period on."""
        self._check_capture_rate(rate_hz)
        self._req_capture_rate = rate_hz

    @property
    def capture_rate_hz(self) -> int:
        return self._req_capture_rate

    # -- health --------------------------------------------------------------

    def stats(self) -> EngineStats:
        gaps = sum(source.gaps for source in self._sources.values())
        thread = self._thread
        underruns, overruns = self._underruns, self._overruns
        if self._timed is not None and self.device_state is DeviceState.OPEN:
            device_under, device_over = self._timed.out.xrun_counts()
            underruns += device_under
            overruns += device_over
        return EngineStats(
            periods=self._periods,
            underruns=underruns + gaps,
            overruns=overruns,
            late_periods=self._late,
            mic_frames_dropped=self._capture.dropped,
            source_gaps=gaps,
            device_state=self.device_state,
            input_peak_dbfs=self._in_meter.peak_dbfs,
            input_rms_dbfs=self._in_meter.rms_dbfs,
            output_peak_dbfs=self._out_meter.peak_dbfs,
            output_rms_dbfs=self._out_meter.rms_dbfs,
            output_latency_ms=self._playout.latency_samples * 1000.0 / RATE_HZ,
            running=thread is not None and thread.is_alive(),
            faults=self._faults,
            last_fault=self._last_fault,
        )

    @property
    def device_format(self) -> DeviceFormat | None:
        return self._format

    @property
    def crash(self) -> BaseException | None:
        """The exception that stopped the audio thread, if one did."""
        return self._crash

    # -- the audio thread ----------------------------------------------------

    def _run(self) -> None:
        stopping, clock, period_s = self._stopping, self._clock, self._period_s
        deadline = clock.monotonic()
        try:
            while not stopping.is_set():
                started = clock.monotonic()
                self.cycles += 1
                try:
                    self._cycle()
                except Exception as exc:  # a device or backend fault: recover, never die
                    self._fault(exc)
                fmt = self._format
                if self._may_sleep() and self._sleep_idle():
                    deadline = clock.monotonic()
                    continue
                if self.device_state is DeviceState.OPEN and fmt is not None and fmt.paced:
                    if started - deadline > 1.5 * period_s:
                        self._late += 1
                    deadline = started
                    continue
                deadline += period_s
                now = clock.monotonic()
                if now - deadline > period_s:
                    self._late += 1
                    deadline = now  # re-anchor rather than burst to catch up
                self._pace(deadline, stopping)
        except BaseException as exc:  # handed to asyncio, which logs it
            self._crash = exc
            self._hand_off(self._report_crash, exc)
        finally:
            self._backend.close()

    def _may_sleep(self) -> bool:
        """Nothing for the thread to do until asyncio asks (see :mod:`.idle`)."""
        timed = self._timed
        return (
            self._sleeper is not None
            and timed is not None
            and self._idle_streak > 1
            and not self._capture_active
            and self.device_state is DeviceState.OPEN
            and self._mixer.idle()
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
        self._periods += periods  # the card's periods went on meanwhile
        sleeper.resync(capture, self._req_capture_rate)
        return True

    def _cycle(self) -> None:
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
                    self._overruns += 1
                self._push_mic(capture)
                self._catch_up(capture)
        if open_ and playback is not None and self._timed is not None:
            self._play_timed(self._timed, playback)
        else:
            self._play(playback if open_ else None)
        self._periods += 1
        self._wake_waiters()

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
            self._mixer.mix(self._silent_mix)
        elif self._idle_period():
            self._mixer.skip_idle()
            self._out_meter.update_silent()
            self._write(playback.silence)
        else:
            self._mixer.mix(playback.mix)
            self._write(playback.process())
        self._playout.record_period()

    def _write(self, data: np.ndarray[Any, Any]) -> None:
        status = self._backend.write(data)
        if status is IoStatus.XRUN:
            self._underruns += 1
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
                self._playout.record_period(timed.out.written_frames())
                self._write(playback.process())
                idle = False
            timed.acknowledge(seq)
            if idle or self.device_state is not DeviceState.OPEN or timed.lead_reached():
                break
        timed.publish()

    def _catch_up(self, capture: CaptureChain) -> None:
        """Late (a busy Python thread held the GIL): take every whole mic period the
        capture ring already holds, oldest first, so none is overwritten while the ring
        still has it. Bounded by the ring's depth; playback then mixes to its lead."""
        queued = self._queued_input
        if queued is None:
            return
        frames = capture.buffer.shape[0]
        for _ in range(self._catch_up_limit):
            if queued.input_queued_frames() < frames:
                return
            if self._backend.read(capture.buffer) is not IoStatus.OK:
                return  # a lost device shows in the next cycle's read
            self.caught_up += 1
            self._push_mic(capture)

    def _push_mic(self, capture: CaptureChain) -> None:
        rate = self._req_capture_rate
        if not self._capture_active:
            # Nobody listens: keep the meter and the resampler's history
            # running (no resampling), but do not queue frames or wake the
            # event loop 50x/s.
            capture.prime(rate)
            return
        fmt = self._format
        latency = fmt.input_latency_s if fmt is not None else 0.0
        queued = self._queued_input
        if queued is not None and fmt is not None:  # newer periods wait behind this one
            latency += queued.input_queued_frames() / fmt.input_rate_hz
        captured_at = self._clock.monotonic() - self._period_s - latency
        self._capture.push(capture.process(rate), rate_hz=rate, captured_at=captured_at)
        self._mic_waker.notify()

    def _wake_waiters(self) -> None:
        for source in self._sources.values():
            channel = source.channel
            if channel.pull_count:
                source.room.notify()
            if channel.playout.wake_due():
                source.progress.notify()

    # -- device state (thread or start(); never per period) -------------------

    def _open_device(self) -> None:
        fmt = self._backend.open(period_ms=self._settings.period_ms)
        try:
            capture = CaptureChain(
                fmt,
                period_ms=self.period_ms,
                mic_channel=self._settings.mic_channel,
                meter=self._in_meter,
                kernel=self._kernel,
            )
            playback = PlaybackChain(
                fmt, period_ms=self.period_ms, meter=self._out_meter, kernel=self._kernel
            )
        except (ValueError, AudioError) as exc:
            self._backend.close()
            raise AudioDeviceError(f"{fmt.description}: unusable format: {exc}") from exc
        self._format = fmt
        self._capture_chain = capture
        self._playback_chain = playback
        self._playout.latency_samples = (
            round(fmt.output_latency_s * RATE_HZ) + playback.delay_samples
        )
        if self._timed is not None:  # positions restart at 0 with each open
            self._timed.opened(
                frames=playback.buffer.shape[0],
                delay_frames=round(playback.delay_samples * fmt.output_rate_hz / RATE_HZ),
                lead_frames=round(self._settings.output_lead_ms * fmt.output_rate_hz / 1000),
            )
            self._idle_streak = 0
        self._set_state(DeviceState.OPEN)

    def _try_reopen(self) -> None:
        self._set_state(DeviceState.REOPENING)
        self._backend.close()
        try:
            self._open_device()
        except AudioDeviceError:
            self._set_state(DeviceState.LOST)
            self._reopen_at = self._clock.monotonic() + self._settings.reopen_interval_s

    def _fault(self, exc: Exception) -> None:
        """A period raised (a write error on the speaker, a backend bug): close the
        device, report, and reopen it after ``reopen_interval_s`` like a lost one.

        The thread itself stays alive, so turns never stick waiting on audio that
        will not move; the fault is counted in :meth:`stats` for status and doctor.
        """
        self._faults += 1
        self._last_fault = repr(exc)
        self._hand_off(self._report_fault, exc)
        try:
            self._lose()
        except Exception as close_exc:  # the device is already broken: only log it
            self._hand_off(self._report_fault, close_exc)
            self._set_state(DeviceState.LOST)
            self._reopen_at = self._clock.monotonic() + self._settings.reopen_interval_s

    def _lose(self) -> None:
        if self._timed is not None and self.device_state is DeviceState.OPEN:
            device_under, device_over = self._timed.out.xrun_counts()  # kept past the close
            self._underruns += device_under
            self._overruns += device_over
        self._backend.close()
        self._set_state(DeviceState.LOST)
        self._reopen_at = self._clock.monotonic() + self._settings.reopen_interval_s

    def _set_state(self, state: DeviceState) -> None:
        if state is self.device_state:
            return
        self.device_state = state
        self._hand_off(self._report_state, state)

    def _hand_off(self, callback: Callable[..., None], arg: object) -> None:
        loop = self._loop
        if loop is None:
            return
        if threading.current_thread() is not self._thread:
            callback(arg)
            return
        try:  # noqa: SIM105 - no context-manager object in the audio thread
            loop.call_soon_threadsafe(callback, arg)
        except RuntimeError:  # loop closed: nobody left to tell
            pass

    # -- asyncio-side reporting ----------------------------------------------

    def _report_state(self, state: DeviceState) -> None:
        fmt = self._format
        if state is DeviceState.LOST:
            log.warning("audio_device_lost", retry_s=self._settings.reopen_interval_s)
        elif state is DeviceState.OPEN and fmt is not None:
            log.info(
                "audio_device_open",
                device=fmt.description,
                in_rate_hz=fmt.input_rate_hz,
                out_rate_hz=fmt.output_rate_hz,
                output_latency_ms=round(fmt.output_latency_s * 1000, 1),
            )
        for listener in list(self._listeners):
            listener(state)

    def _report_fault(self, exc: object) -> None:
        log.error(
            "audio_period_failed",
            error=repr(exc),
            faults=self._faults,
            retry_s=self._settings.reopen_interval_s,
        )

    def _report_crash(self, exc: object) -> None:
        log.error("audio_thread_crashed", error=repr(exc))
        # waiters would wait forever on a dead thread: wake them, they raise AudioError
        self._mic_waker.close()
        for source in self._sources.values():
            source.close()

    # -- helpers -------------------------------------------------------------

    def _bind_loop(self) -> None:
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None

    def _cut_output(self) -> list[int] | None:
        """asyncio, after a flush request: fade the timed output out now (the C
        callback honours it in its next short period); each source's ring
        position at the fade's end. ``None`` without a timed, open output."""
        timed = self._timed
        if timed is None or self.device_state is not DeviceState.OPEN:
            return None
        return timed.cut()

    def _is_closed(self) -> bool:
        """Closed, or the thread died: either way no audio will move again."""
        return self._closed or self._crash is not None

    def _ended(self) -> str:
        return "closed" if self._closed else f"thread crashed ({self._crash!r})"

    def _ring_ms(self, name: SourceName) -> int:
        s = self._settings
        return {
            "speech": s.speech_ring_ms,
            "earcon": s.earcon_ring_ms,
            "content": s.content_ring_ms,
            "comms": s.comms_ring_ms,
        }[name]

    def _build_mixer(self, settings: AudioSettings) -> Mixer:
        rings = {
            name: SampleRing(ms_to_samples(self._ring_ms(name)), name=name) for name in SOURCES
        }
        return Mixer(
            rings,
            period_samples=self._n,
            rate_hz=RATE_HZ,
            ramp_ms=settings.ramp_ms,
            duck_depth_db=settings.duck_depth_db,
            duck_attack_ms=settings.duck_attack_ms,
            duck_release_ms=settings.duck_release_ms,
            limiter_threshold=db_to_gain(settings.limiter_threshold_dbfs),
            kernel=self._kernel,
        )

    @staticmethod
    def _check_capture_rate(rate_hz: int) -> None:
        if rate_hz not in CAPTURE_RATES_HZ:
            raise ValueError(f"capture rate must be one of {CAPTURE_RATES_HZ} Hz, got {rate_hz}")
