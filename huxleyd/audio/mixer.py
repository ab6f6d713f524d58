"""The four-source ducking mixer (audio-thread side; pure numpy, no threads, no I/O).

Each :class:`SourceChannel` owns one :class:`~huxleyd.audio.ring.SampleRing`
and three gain stages multiplied together per sample:

- **user gain** (``set_gain``), ramped over one period;
- **duck gain**, moving linearly in dB at ``depth / attack`` going down and
  ``depth / release`` coming back (defaults −12 dB, 80 ms, 600 ms);
- **transport gain** for pause, resume and flush: a ramp of ``ramp_ms``
  (≥ 5 ms) so that a cut never clicks.

With the C kernel (:mod:`huxleyd.audio.dsp`) the whole period, state machine
and arithmetic, is one call into the C mixer core (``_mixcore.c``, through
:class:`CoreMix`), written to run without the GIL too;
the Python and numpy code here is the reference and the fallback where the
extension is not built.

Control from asyncio is by *request fields*: the asyncio side stores a new
value (one atomic attribute store), the thread notices at the next period
and ramps to it. Nothing here blocks or takes a lock.

:class:`Mixer` pulls the sources into one period (earcon first, so speech
can wait for a "before speech" earcon and start on the very sample after
it), applies the master gain (the software volume stage) and the
:class:`~huxleyd.audio.limiter.SoftLimiter`.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from huxleyd.audio.doorbell import Doorbell, Request
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.limiter import SoftLimiter
from huxleyd.audio.playout import SourcePlayout
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SOURCES, SourceName
from huxleyd.pcm import Float32Array, db_to_gain


class SourceChannel:
    """One playback source as the audio thread sees it.

    Request fields (``req_*``) are written by asyncio only; the rest by the
    thread only. After each period :attr:`pull_start`, :attr:`pull_offset`
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
        # thread state
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
        self._flush_pending = False
        # published by the thread
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
        """True once a pause request has ramped down (thread view)."""
        return self._paused

    @property
    def duck_db(self) -> float:
        """The duck gain now, in dB (0 when not ducked)."""
        return self._duck_db

    def idle(self) -> bool:
        """Nothing to play and nothing moving: rendering would add zeros and change nothing."""
        if self.req_flush_seq != self._flush_seq or self.req_paused != self._paused:
            return False
        if self._gain != self.req_gain:
            return False
        if self._duck_db != (self._depth_db if self.req_ducked else 0.0):
            return False
        return self._paused or self.ring.available() == 0

    def skip_idle(self) -> None:
        """What :meth:`render` would have done in an idle period, minus the arithmetic."""
        self.pull_start = self.ring.read_pos
        self.pull_offset = 0
        self.pull_count = 0
        self.skip_from = self.skip_to = 0
        if not self._paused:
            if self._flowing:  # ran dry after a full period: the same gap render counts
                self.dry_count += 1
            self._flowing = False

    def render(
        self,
        mix: Float32Array,
        tmp: Float32Array,
        gains: Float32Array,
        fades: tuple[Float32Array, Float32Array, Float32Array],
        *,
        offset: int = 0,
        limit: int | None = None,
    ) -> None:
        """Pull this period's samples, apply the gains and add them into ``mix``.

        ``offset``/``limit`` restrict where and how much may be pulled (the
        earcon-before-speech gate). ``fades`` are the preallocated
        (fade_out, fade_in, linear 0→1) shapes of one period; ``tmp`` and
        ``gains`` are scratch. This is the reference: with the C kernel the whole
        period is :class:`CoreMix`'s one call.
        """
        self.pull_start = self.ring.read_pos
        self.pull_offset = offset
        self.pull_count = 0
        room = self._period - offset if limit is None else min(self._period - offset, limit)
        self.skip_from = self.skip_to = 0
        # the gains first, as the C core (which mixes as it pulls)
        start_gain, end_gain = self._step_gains()
        count, fade = self._transport(room, fades)
        if count <= 0:
            self._pulled(0, count)
            return
        tmp.fill(0.0)
        got = self.ring.read_into(tmp, offset, count)
        self._pulled(got, count)
        if got == 0:
            return
        if start_gain == end_gain and fade is None:
            np.multiply(tmp, np.float32(end_gain), out=tmp)
        else:
            np.multiply(fades[2], np.float32(end_gain - start_gain), out=gains)
            gains += np.float32(start_gain)
            if fade is not None:
                np.multiply(gains, fade, out=gains)
            np.multiply(tmp, gains, out=tmp)
        np.add(mix, tmp, out=mix)

    def _transport(
        self, room: int, fades: tuple[Float32Array, Float32Array, Float32Array]
    ) -> tuple[int, Float32Array | None]:
        """Flush, pause or resume as requested; return (samples to pull, fade to apply),
        -1 for no pull at all. A flush's fade-out is pulled before the flush drops the
        rest (in :meth:`_pulled`)."""
        fade_out, fade_in, _ = fades
        if self.req_flush_seq != self._flush_seq:
            self._flush_pending = True
            if not self._paused:  # fade out what plays now, then drop the rest
                return min(self._ramp, room), fade_out
            return -1, None
        if self._paused:
            if self.req_paused:
                return -1, None
            self._paused = False
            return room, fade_in
        if self.req_paused:
            self._paused = True
            return min(self._ramp, room), fade_out
        return room, None

    def _pulled(self, got: int, count: int) -> None:
        """Bookkeeping after a pull of ``got`` of ``count`` wanted samples (then the flush)."""
        if count >= 0:
            self.pull_count = got
            if got < count and self._flowing:
                self.dry_count += 1
            self._flowing = got == count and got > 0
        if self._flush_pending:
            self._flush_pending = False
            self._flush()

    def _flush(self) -> None:
        self._flush_seq = self.req_flush_seq
        before = self.ring.read_pos
        if self.ring.skip_to(self.req_flush_to):
            self.skip_from, self.skip_to = before, self.ring.read_pos
            self.playout.skips.record(before, self.ring.read_pos)
        self._flowing = False

    def _step_gains(self) -> tuple[float, float]:
        """Advance the user and duck gains by one period; return (start, end) linear."""
        start = self._gain * db_to_gain(self._duck_db)
        self._gain = self.req_gain
        target_db = self._depth_db if self.req_ducked else 0.0
        if self._duck_db > target_db:
            self._duck_db = max(target_db, self._duck_db - self._attack_step_db)
        elif self._duck_db < target_db:
            self._duck_db = min(target_db, self._duck_db + self._release_step_db)
        return start, self._gain * db_to_gain(self._duck_db)


class Mixer:
    """Mixes the four sources into one float32 period at the mixer rate.

    All buffers are allocated here, once; :meth:`mix` allocates none.
    """

    req_master_gain = Request[float]()
    """The software volume stage's gain, requested by asyncio (linear)."""
    req_gate = Request[tuple[int, int, int]]()
    """(seq, earcon end position, speech position) from ``play_earcon(before_speech=True)``."""

    def __init__(
        self,
        rings: dict[SourceName, SampleRing],
        *,
        period_samples: int,
        rate_hz: int,
        ramp_ms: float = 5.0,
        duck_depth_db: float = -12.0,
        duck_attack_ms: float = 80.0,
        duck_release_ms: float = 600.0,
        limiter_threshold: float = 0.891,
        kernel: ModuleType | None = KERNEL,
    ) -> None:
        period_ms = period_samples * 1000.0 / rate_hz
        self.doorbell = Doorbell()
        """Rung by every request and ring write: the idle audio thread sleeps on it."""
        for ring in rings.values():
            ring.on_write = self.doorbell.ring
        ramp = max(1, round(ramp_ms * rate_hz / 1000.0))
        self.period_samples = period_samples
        self.channels: dict[SourceName, SourceChannel] = {
            name: SourceChannel(
                name,
                rings[name],
                period_samples=period_samples,
                ramp_samples=ramp,
                duck_depth_db=duck_depth_db,
                duck_attack_ms=duck_attack_ms,
                duck_release_ms=duck_release_ms,
                period_ms=period_ms,
                doorbell=self.doorbell,
            )
            for name in SOURCES
        }
        self.limiter = SoftLimiter(
            period_samples, rate_hz=rate_hz, threshold=limiter_threshold, kernel=kernel
        )
        self._req_master_gain = 1.0
        self._master_gain = 1.0
        self._req_gate: tuple[int, int, int] = (0, 0, 0)
        self._gate_seq = 0
        self._gate_active = False
        self._gate_earcon_end = 0
        self._gate_speech_pos = 0
        n = period_samples
        self._tmp: Float32Array = np.zeros(n, dtype=np.float32)
        self._gains: Float32Array = np.zeros(n, dtype=np.float32)
        unit = np.arange(1, n + 1, dtype=np.float32) / np.float32(n)
        ramp_n = min(ramp, n)
        fade_out = np.zeros(n, dtype=np.float32)
        fade_out[:ramp_n] = 1.0 - np.arange(1, ramp_n + 1, dtype=np.float32) / np.float32(ramp_n)
        fade_in = np.ones(n, dtype=np.float32)
        fade_in[:ramp_n] = np.arange(1, ramp_n + 1, dtype=np.float32) / np.float32(ramp_n)
        self.fades = (fade_out, fade_in, unit)
        """(fade_out, fade_in, linear 0→1): the transport fades and the ramp shape."""
        self._unit = unit
        self._by_bit = tuple((1 << i, self.channels[name]) for i, name in enumerate(SOURCES))
        self._core = None if kernel is None else CoreMix(kernel, self)
        """The C core, which mixes the whole period (None: the numpy reference below)."""

    # The channels' shared fade and duck shape, as the C core reads it (_dspmix.c's mixer
    # table): every channel is built with the same, so the speech channel's is it.
    @property
    def _ramp(self) -> int:
        return self.channels["speech"]._ramp

    @property
    def _depth_db(self) -> float:
        return self.channels["speech"]._depth_db

    @property
    def _attack_step_db(self) -> float:
        return self.channels["speech"]._attack_step_db

    @property
    def _release_step_db(self) -> float:
        return self.channels["speech"]._release_step_db

    def idle(self) -> bool:
        """True when :meth:`mix` would produce a period of zeros and change no state
        but the sources' pull bookkeeping: no source has audio, no ramp runs."""
        if self._master_gain != self.req_master_gain or self.limiter.gain != 1.0:
            return False
        if self._gate_active or self.req_gate[0] != self._gate_seq:
            return False
        return all(channel.idle() for channel in self.channels.values())

    def holding(self) -> int:
        """Which sources are not idle (audio queued or a ramp running), as a mask:
        bit ``i`` for ``SOURCES[i]``. What the speaker callback is told each period."""
        mask = 0
        for bit, channel in self._by_bit:
            if not channel.idle():
                mask |= bit
        return mask

    def skip_idle(self) -> None:
        """The idle path: :meth:`mix`'s bookkeeping for a silent period, no numpy."""
        for channel in self.channels.values():
            channel.skip_idle()

    def mix(self, out: Float32Array) -> None:
        """Fill ``out`` (one period) with the mixed, gained and limited sources."""
        if self._core is not None:
            self._core.mix(out)
            return
        out.fill(0.0)
        tmp, gains, fades = self._tmp, self._gains, self.fades
        earcon = self.channels["earcon"]
        speech = self.channels["speech"]
        earcon.render(out, tmp, gains, fades)
        offset, limit = self._speech_window(speech, earcon)
        speech.render(out, tmp, gains, fades, offset=offset, limit=limit)
        self.channels["content"].render(out, tmp, gains, fades)
        self.channels["comms"].render(out, tmp, gains, fades)
        self._apply_master(out)
        self.limiter.process(out)

    def _speech_window(
        self, speech: SourceChannel, earcon: SourceChannel
    ) -> tuple[int, int | None]:
        """Where speech may play this period, given a pending earcon gate."""
        seq, earcon_end, speech_pos = self.req_gate
        if seq != self._gate_seq:
            self._gate_seq = seq
            if not self._gate_active:
                flowing = speech.pull_count > 0
                self._gate_speech_pos = speech_pos if flowing else speech.ring.read_pos
            self._gate_active = True
            self._gate_earcon_end = earcon_end
        if not self._gate_active:
            return 0, None
        before_gate = max(0, self._gate_speech_pos - speech.ring.read_pos)
        if earcon.ring.read_pos < self._gate_earcon_end:
            return 0, before_gate  # the earcon is still playing: hold queued speech
        self._gate_active = False
        if before_gate > 0 or earcon.pull_start >= self._gate_earcon_end:
            return 0, None
        # the earcon ended inside this period: speech starts on the next sample
        played = min(self._gate_earcon_end - earcon.pull_start, earcon.pull_count)
        return earcon.pull_offset + played, None

    def _apply_master(self, out: Float32Array) -> None:
        start, end = self._master_gain, self.req_master_gain
        self._master_gain = end
        if start == end:
            if end != 1.0:
                np.multiply(out, np.float32(end), out=out)
            return
        np.multiply(self._unit, np.float32(end - start), out=self._gains)
        self._gains += np.float32(start)
        np.multiply(out, self._gains, out=out)


class CoreMix:
    """One :class:`Mixer`'s period, mixed by the C mixer core (``_mixcore.c``).

    ``_dsp.mix_period`` reads the requests (the Request descriptors' slots), the
    state and the rings' positions from the Mixer and its channels, lets the core
    mix the period (gains, duck ramps, transport fades, the earcon gate, the master
    gain, the limiter), and writes the state and the period's report (pull
    positions, dry counts, what a flush dropped) back into the same attributes, so
    the rest of the engine reads the same fields whichever path mixed. Which
    attribute each core field is, is listed once, in ``_dspmix.c``'s tables. The
    Python code above is the reference; tests/audio/test_mixcore.py compares the
    two on scripts Hypothesis generates.
    """

    def __init__(self, kernel: ModuleType, mixer: Mixer) -> None:
        self._mix_period = kernel.mix_period
        self._mixer = mixer
        channels = tuple(mixer.channels[name] for name in kernel.SOURCE_ORDER)
        self._channels = channels
        self._rings = tuple(channel.ring.samples for channel in channels)
        fade_out, fade_in, unit = mixer.fades
        self._shapes = (unit, fade_out, fade_in, mixer.limiter.attack)

    def mix(self, out: Float32Array) -> None:
        """Mixer.mix, in C: requests and state in, one call, state and report back."""
        unit, fade_out, fade_in, attack = self._shapes
        self._mix_period(
            out, self._channels, self._mixer, self._rings, unit, fade_out, fade_in, attack
        )
