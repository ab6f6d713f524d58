"""The four-source ducking mixer: the C mixer core, driven from the audio thread.

There is one mixer: the C core (``csrc/_mixcore.c``, ``mc_mix_period``): each
source's user gain, duck ramp in dB, pause/resume/flush fades, the
earcon-before-speech gate, the master gain (the software volume stage) and the
soft limiter, as a pure C function of its state, its requests and the rings. On
the card the C feeder runs it without the GIL (:mod:`huxleyd.audio.fed`); on the
WAV backend, and to nowhere while a device is lost, :meth:`Mixer.mix` runs it
with the GIL through ``_dsp.mix_period``, on the struct
:class:`~huxleyd.audio.corestate.CoreState` packs from the fields here. The numpy
mixer it was written from lives in the tests, as the oracle it is compared with
(``tests/oracles/numpy_mixer.py``).

Control from asyncio is by *request fields* (here and on each
:class:`~huxleyd.audio.channel.SourceChannel`): one atomic attribute store that
rings the doorbell; the mixer picks it up at the next period and ramps to it.
Nothing here blocks or takes a lock.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from huxleyd.audio.channel import SourceChannel
from huxleyd.audio.corestate import CoreState
from huxleyd.audio.doorbell import Doorbell, Request
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.limiter import SoftLimiter
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SOURCES, SourceName
from huxleyd.errors import AudioError
from huxleyd.pcm import Float32Array

NOT_BUILT = (
    "the C mix (huxleyd.audio._dsp) is not built: nothing can play; reinstall huxleyd "
    "with a C compiler (make setup says what is missing)"
)
"""Why a build without the extension plays nothing: there is no second mixer."""


def fade_shapes(
    period_samples: int, ramp_samples: int
) -> tuple[Float32Array, Float32Array, Float32Array]:
    """(fade_out, fade_in, linear 0→1) over one period: the transport fades, ``ramp``
    samples long then flat, and the ramp's shape (the core's and the feeder's)."""
    n = period_samples
    unit = np.arange(1, n + 1, dtype=np.float32) / np.float32(n)
    ramp_n = min(ramp_samples, n)
    fade_out = np.zeros(n, dtype=np.float32)
    fade_out[:ramp_n] = 1.0 - np.arange(1, ramp_n + 1, dtype=np.float32) / np.float32(ramp_n)
    fade_in = np.ones(n, dtype=np.float32)
    fade_in[:ramp_n] = np.arange(1, ramp_n + 1, dtype=np.float32) / np.float32(ramp_n)
    return fade_out, fade_in, unit


class Mixer:
    """Mixes the four sources into one float32 period at the mixer rate (the C core).

    All buffers are allocated here, once; :meth:`mix` allocates none but the
    packed values' ints and floats.
    """

    req_master_gain = Request[float]()
    """The software volume stage's gain, requested by asyncio (linear)."""
    req_gate = Request[tuple[int, int, int]]()
    """(seq, earcon end position, speech position) from ``play_earcon(before_speech=True)``."""

    channel_class: type[SourceChannel] = SourceChannel
    """What each source's channel is built as (the tests' oracle adds its arithmetic)."""

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
        self.ramp_samples = max(1, min(ramp, period_samples))
        """The transport fades' length (every channel's)."""
        self.duck_depth_db = duck_depth_db
        self.attack_step_db = abs(duck_depth_db) * period_ms / duck_attack_ms
        self.release_step_db = abs(duck_depth_db) * period_ms / duck_release_ms
        """The duck ramp's steps per period, in dB (every channel's)."""
        duck = (duck_depth_db, duck_attack_ms, duck_release_ms)
        self.channels = self._make_channels(rings, ramp=ramp, period_ms=period_ms, duck=duck)
        self.limiter = SoftLimiter(
            period_samples, rate_hz=rate_hz, threshold=limiter_threshold, kernel=kernel
        )
        self._no_requests_yet()
        self.fades = fade_shapes(period_samples, ramp)
        """(fade_out, fade_in, linear 0→1): the transport fades and the ramp shape."""
        self._by_bit = tuple((1 << i, self.channels[name]) for i, name in enumerate(SOURCES))
        self._kernel = kernel
        self.core: CoreState | None = None if kernel is None else CoreState(kernel, self)
        """The core's struct, packed from these fields (None: the C mix is not built)."""
        if kernel is not None:
            self._bind_core(kernel)

    def _make_channels(
        self,
        rings: dict[SourceName, SampleRing],
        *,
        ramp: int,
        period_ms: float,
        duck: tuple[float, float, float],
    ) -> dict[SourceName, SourceChannel]:
        """One channel per source on its ring, sharing the fades' and the duck's shape
        (``duck``: depth in dB, attack and release in ms) and the doorbell."""
        depth_db, attack_ms, release_ms = duck
        return {
            name: self.channel_class(
                name,
                rings[name],
                period_samples=self.period_samples,
                ramp_samples=ramp,
                duck_depth_db=depth_db,
                duck_attack_ms=attack_ms,
                duck_release_ms=release_ms,
                period_ms=period_ms,
                doorbell=self.doorbell,
            )
            for name in SOURCES
        }

    def _bind_core(self, kernel: ModuleType) -> None:
        """What :meth:`mix` hands the core each period, bound once in its order: the
        sources' rings, the channels it unpacks into, the fade and limiter shapes."""
        order = tuple(self.channels[name] for name in kernel.SOURCE_ORDER)
        self._rings = tuple(channel.ring.samples for channel in order)
        self._core_channels = order
        fade_out, fade_in, unit = self.fades
        self._shapes = (unit, fade_out, fade_in, self.limiter.attack)

    def _no_requests_yet(self) -> None:
        """The master gain and the earcon gate as at start: nothing requested yet
        (the request fields' stores and the core's copies of them)."""
        self._req_master_gain = 1.0
        self._master_gain = 1.0
        self._req_gate: tuple[int, int, int] = (0, 0, 0)
        self._gate_seq = 0
        self._gate_active = False
        self._gate_earcon_end = 0
        self._gate_speech_pos = 0

    @property
    def can_mix(self) -> bool:
        """False in a build without the C extension: nothing plays (see :data:`NOT_BUILT`)."""
        return self.core is not None

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
        """The idle path: :meth:`mix`'s bookkeeping for a silent period, no arithmetic."""
        for channel in self.channels.values():
            channel.skip_idle()

    def mix(self, out: Float32Array) -> None:
        """Fill ``out`` (one period) with the mixed, gained and limited sources: the
        fields packed into the core's struct, one call, the struct unpacked back."""
        core, kernel = self.core, self._kernel
        if core is None or kernel is None:
            raise AudioError(NOT_BUILT)
        unit, fade_out, fade_in, attack = self._shapes
        kernel.mix_period(out, core.pack(), self._rings, unit, fade_out, fade_in, attack)
        core.unpack()
        for channel in self._core_channels:
            if channel.skip_to > channel.skip_from:
                channel.playout.skips.record(channel.skip_from, channel.skip_to)

    def core_state(self) -> bytes:
        """The core's struct now (the C feeder takes it at open and with each request)."""
        core = self.core
        if core is None:
            raise AudioError(NOT_BUILT)
        return core.snapshot()

    def restore_core_state(self, state: bytes) -> None:
        """The C feeder stopped: its state (the core's struct) back into these fields,
        so :meth:`mix` carries on where it left."""
        core = self.core
        if core is None:
            raise AudioError(NOT_BUILT)
        core.unpack(state)
