"""The audio engine: the facade asyncio uses to reach the audio thread.

:class:`AudioEngine` builds what both sides share (the mixer and its four
rings, the playout clock, the capture ring, the meters) and hands them to the
:class:`~huxleyd.audio.audio_thread.AudioThread`, the one loop that owns the
sound device and runs per period (its real-time contract is in that module).
Everything here runs on the event loop (or in the caller's thread for
``step()``) and talks to the thread only through request fields, rings and
wakers: it never blocks on the thread, and the thread never calls into it
except through the state, fault and crash reporters it hands to asyncio.

Per-source operations (write, duck, pause, flush, gain, played position,
drain) live on the :class:`~huxleyd.audio.source.PlaybackSource` that
:meth:`AudioEngine.source` returns; the engine keeps what spans sources:
earcons, the master gain, mic reads and the capture switch, stats, and
device state listeners.

Two ways to drive it: :meth:`AudioEngine.start` runs the thread (paced by
the device, or by the engine clock when the backend is not paced: WAV files,
a lost device); :meth:`AudioEngine.step` / :meth:`AudioEngine.run_periods`
run periods synchronously in the caller's thread, for deterministic tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from types import ModuleType
from typing import Any

from huxleyd.audio.audio_thread import AudioThread
from huxleyd.audio.backends.base import AudioBackend, DeviceFormat, WidenablePeriod
from huxleyd.audio.chains import CAPTURE_RATES_HZ
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.fed import FedOutput, feeder_module
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import AsyncWaker, FrameRing, SampleRing, SharedSampleRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.source import PlaybackSource
from huxleyd.audio.thread_parts import MicSide, Platform, Reporters, SpeakerSide
from huxleyd.audio.timed import DeviceCounts
from huxleyd.audio.types import (
    SOURCES,
    DeviceState,
    EngineStats,
    MicFrame,
    Silences,
    SourceName,
)
from huxleyd.clock import Clock, MonotonicClock
from huxleyd.errors import AudioDeviceError, AudioError
from huxleyd.logs import get_logger
from huxleyd.pcm import RATE_HZ, db_to_gain, ms_to_samples, period_frames

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
        feeder: bool = True,
    ) -> None:
        self._check_capture_rate(capture_rate_hz)
        self._kernel = kernel
        """The chains' arithmetic (resampling, meters, PCM16): the C kernel, or None for
        numpy (the tests compare the two). The mix is the C core whatever this says
        (:mod:`huxleyd.audio.mixer`): there is no second mixer."""
        self._backend = backend
        self._settings = settings
        clock = clock or MonotonicClock()
        self.period_ms = settings.period_ms
        period_s = settings.period_ms / 1000.0
        self._n = period_frames(RATE_HZ, settings.period_ms)
        self._rt = feeder_module(backend, KERNEL) if feeder else None
        """The C extension whose feeder mixes on the card, or None: the WAV backend, or
        ``feeder=False`` (only to compare: the audio thread then runs the same C mix and
        writes the card's ring itself, as when the feeder cannot start)."""
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
        self._in_meter = LevelMeter(period_s)
        self._out_meter = LevelMeter(period_s)
        self._closed = False
        self._listeners: list[StateListener] = []
        self._widened_logged = ""
        self._steps_logged = (0, 0)
        self._audio_thread = self._build_thread(clock, capture_rate_hz, idle_path=idle_path)
        """The device and the per-period loop; it writes the state and counters read here."""

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        """Open the device and start the audio thread.

        A device that will not open is not fatal: the engine starts in
        ``LOST`` state, plays to nowhere and retries every
        ``audio.reopen_interval_s`` (the reason is logged).
        """
        if self._closed:
            raise AudioError("audio engine closed; create a new one")
        audio = self._audio_thread
        if audio.thread is not None:
            return
        self._bind_loop()
        if audio.device_state is not DeviceState.OPEN:
            try:
                audio.open_device()
            except AudioDeviceError as exc:
                audio.open_error = str(exc)
                log.warning(
                    "audio_device_unavailable",
                    error=str(exc),
                    retry_s=self._settings.reopen_interval_s,
                )
                audio.retry_later()
        audio.start()

    def close(self, *, timeout_s: float = 2.0) -> None:
        """Stop the thread (joined with ``timeout_s``), close the device. Idempotent."""
        if self._closed:
            return
        self._closed = True
        audio = self._audio_thread
        if not audio.stop(timeout_s):
            log.error("audio_thread_stuck", timeout_s=timeout_s)
        audio.device_state = DeviceState.CLOSED
        self._mic_waker.close()
        for source in self._sources.values():
            source.close()

    def step(self) -> None:
        """Run exactly one period now, in the caller's thread (tests, benchmarks)."""
        audio = self._audio_thread
        if audio.thread is not None:
            raise AudioError("step() drives the engine by hand; the engine thread is running")
        if self._closed:
            raise AudioError("audio engine closed")
        if audio.device_state is DeviceState.CLOSED:
            audio.open_device()
        audio.cycle()

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

    def enable_far_end(self) -> None:
        """Keep what is played, with when it reaches the DAC, for an echo canceller
        (:meth:`read_far_end`); 500 ms of it, the oldest dropped if nobody reads."""
        if self._audio_thread.far_end is None:
            slots = 500 // self._settings.period_ms + 2
            self._audio_thread.far_end = FrameRing(slots, self._n)

    def read_far_end(self) -> MicFrame | None:
        """The oldest played period not read yet (``captured_at``: its DAC time), or None."""
        ring = self._audio_thread.far_end
        return None if ring is None else ring.pop()

    def set_capture_active(self, active: bool) -> None:
        """Queue mic frames for asyncio (PTT held, a claim) or not (idle: no wake-ups).

        While inactive the device is still read (levels keep moving) but no
        frame is queued, so none is dropped or counted as lost either.
        """
        self._audio_thread.mic.req_capture_active = active
        self._mixer.doorbell.ring()  # an idle thread that slept must read again

    def drain_mic(self) -> int:
        """Discard queued mic frames (PTT press: old audio must not be sent); return how many."""
        return self._capture.clear()

    def set_capture_rate(self, rate_hz: int) -> None:
        """Deliver mic frames at ``rate_hz`` (24000 or 16000) from the next period on."""
        self._check_capture_rate(rate_hz)
        self._audio_thread.mic.req_capture_rate = rate_hz

    @property
    def capture_rate_hz(self) -> int:
        return self._audio_thread.mic.req_capture_rate

    # -- health --------------------------------------------------------------

    @property
    def mix_path(self) -> str:
        """Who runs the C mix now: ``"c_feeder"`` (the C feeder, no GIL: the card) or
        ``"python"`` (the audio thread, through ``_dsp.mix_period``: the WAV backend, a
        lost device, or a card whose feeder could not start)."""
        fed = self._audio_thread.fed
        return "c_feeder" if fed is not None and fed.running else "python"

    @property
    def feeder_error(self) -> str | None:
        """Why the C feeder did not start at the last open of the card."""
        fed = self._audio_thread.fed
        return None if fed is None else fed.error

    def stats(self) -> EngineStats:
        gaps = sum(source.gaps for source in self._sources.values())
        audio = self._audio_thread
        open_ = audio.device_state is DeviceState.OPEN
        device = DeviceCounts() if audio.timed is None else audio.timed.counts(open_=open_)
        underruns = audio.underruns + device.underruns
        overruns = audio.overruns + device.overruns
        dropouts, dropout_ms, by_source = device.dropouts, device.dropout_ms, device.source_dropouts
        return EngineStats(
            periods=audio.periods,
            underruns=underruns + gaps,
            overruns=overruns,
            late_periods=audio.late,
            mic_frames_dropped=self._capture.dropped,
            source_gaps=gaps,
            device_state=audio.device_state,
            input_peak_dbfs=self._in_meter.peak_dbfs,
            input_rms_dbfs=self._in_meter.rms_dbfs,
            output_peak_dbfs=self._out_meter.peak_dbfs,
            output_rms_dbfs=self._out_meter.rms_dbfs,
            output_latency_ms=self._playout.latency_samples * 1000.0 / RATE_HZ,
            running=audio.running,
            speaker_dropouts=dropouts,
            source_dropouts=tuple(
                (name, count) for name, count in zip(SOURCES, by_source, strict=True) if count
            ),
            faults=audio.faults,
            last_fault=audio.last_fault,
            open_error=audio.open_error,
            period_widened=self._widened(),
            period_steps=(audio.ladder.steps[0], audio.ladder.steps[1]),
            silences=self._silences(underruns - dropouts, dropouts, dropout_ms),
        )

    def _silences(self, card_xruns: int, dropouts: int, dropout_ms: float) -> Silences:
        """Every silence heard inside a reply, by cause (:class:`Silences`)."""
        audio = self._audio_thread
        late, late_ms = audio.fed.late_sources() if audio.fed is not None else (0, 0.0)
        return Silences(
            card_xruns=card_xruns,
            dry_ring=dropouts,
            dry_ring_ms=dropout_ms,
            late_source=late,
            late_source_ms=late_ms,
            reopens=audio.ladder.silences,
            reopen_ms=audio.ladder.silence_s * 1000.0,
        )

    def _widened(self) -> str:
        backend = self._backend
        return backend.widened() if isinstance(backend, WidenablePeriod) else ""

    @property
    def device_state(self) -> DeviceState:
        return self._audio_thread.device_state

    @property
    def device_format(self) -> DeviceFormat | None:
        return self._audio_thread.device_format

    @property
    def crash(self) -> BaseException | None:
        """The exception that stopped the audio thread, if one did."""
        return self._audio_thread.crash

    @property
    def caught_up(self) -> int:
        """Mic periods taken beyond one per cycle: the engine ran late and caught up."""
        return self._audio_thread.mic.caught_up

    @property
    def cycles(self) -> int:
        """Times the thread ran a cycle (one per period, fewer while it sleeps idle)."""
        return self._audio_thread.cycles

    # -- asyncio-side reporting ----------------------------------------------

    def _report_state(self, state: DeviceState) -> None:
        fmt = self._audio_thread.device_format
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
            widened = self._widened()
            wider, narrower = self._audio_thread.ladder.steps
            if widened and widened != self._widened_logged and wider > self._steps_logged[0]:
                log.warning("audio_period_widened", why=widened, wider=wider, narrower=narrower)
            elif narrower > self._steps_logged[1]:
                log.info(
                    "audio_period_narrowed",
                    why="no card xrun for a calm stretch, nothing playing",
                    now=widened or "the first period",
                    wider=wider,
                    narrower=narrower,
                )
            self._widened_logged = widened
            self._steps_logged = (wider, narrower)
        for listener in list(self._listeners):
            listener(state)

    def _report_fault(self, exc: object) -> None:
        log.error(
            "audio_period_failed",
            error=repr(exc),
            faults=self._audio_thread.faults,
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
        audio = self._audio_thread
        if audio.loop is None:
            try:
                audio.loop = asyncio.get_running_loop()
            except RuntimeError:
                audio.loop = None

    def _cut_output(self) -> list[int] | None:
        """asyncio, after a flush request: fade the timed output out now (the C
        callback honours it in its next short period); each source's ring
        position at the fade's end. ``None`` without a timed, open output."""
        audio = self._audio_thread
        timed = audio.timed
        if timed is None or audio.device_state is not DeviceState.OPEN:
            return None
        positions = timed.cut()
        if audio.fed is not None:  # the feeder acknowledges the cut: let it look now
            audio.fed.wake()
        return positions

    def _is_closed(self) -> bool:
        """Closed, or the thread died: either way no audio will move again."""
        return self._closed or self._audio_thread.crash is not None

    def _ended(self) -> str:
        return "closed" if self._closed else f"thread crashed ({self._audio_thread.crash!r})"

    def _ring_ms(self, name: SourceName) -> int:
        s = self._settings
        return {
            "speech": s.speech_ring_ms,
            "earcon": s.earcon_ring_ms,
            "content": s.content_ring_ms,
            "comms": s.comms_ring_ms,
        }[name]

    def _build_thread(self, clock: Clock, capture_rate_hz: int, *, idle_path: bool) -> AudioThread:
        """The audio thread on the parts built above, reporting to this engine; the C
        feeder mixes for it where the card has one (:mod:`.fed`)."""
        rt = self._rt
        fed = (
            None
            if rt is None or KERNEL is None
            else FedOutput(rt, KERNEL, self._mixer, self._playout, self._out_meter)
        )
        return AudioThread(
            Platform(backend=self._backend, kernel=self._kernel, idle_path=idle_path),
            settings=self._settings,
            clock=clock,
            speaker=SpeakerSide(
                mixer=self._mixer,
                playout=self._playout,
                sources=self._sources,
                meter=self._out_meter,
                fed=fed,
            ),
            mic=MicSide(
                capture=self._capture,
                waker=self._mic_waker,
                rate_hz=capture_rate_hz,
                meter=self._in_meter,
            ),
            reporters=Reporters(
                on_state=self._report_state,
                on_fault=self._report_fault,
                on_crash=self._report_crash,
            ),
        )

    def _build_mixer(self, settings: AudioSettings) -> Mixer:
        rtout = self._rt
        rings: dict[SourceName, SampleRing] = {
            name: SampleRing(ms_to_samples(self._ring_ms(name)), name=name)
            if rtout is None
            else SharedSampleRing(rtout.SourceRing(ms_to_samples(self._ring_ms(name))), name=name)
            for name in SOURCES
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
            kernel=KERNEL,  # the one mixer: the C core
        )

    @staticmethod
    def _check_capture_rate(rate_hz: int) -> None:
        if rate_hz not in CAPTURE_RATES_HZ:
            raise ValueError(f"capture rate must be one of {CAPTURE_RATES_HZ} Hz, got {rate_hz}")
