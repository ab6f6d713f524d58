"""The numpy mixer: the oracle the C mixer core is compared with, sample for sample.

Until issue 39 this was huxleyd's second mixer (``audio.mix = "python"``, and the
fallback without a compiler). It now lives here only: the daemon mixes with the C
core (``huxleyd/audio/csrc/_mixcore.c``) on every backend that plays, and
``tests/audio/test_mix_oracle.py`` and ``tests/audio/test_mixcore.py`` check that core
against this plain, readable numpy version of the same semantics:

- each source: its user gain ramped over one period, its duck gain moving linearly
  in dB (``depth / attack`` down, ``depth / release`` back), its transport fade for
  pause, resume and flush (``ramp_ms``), and the dry count (a source that ran out
  part way after a full period);
- the earcon first, so speech may wait for a "before speech" earcon and start on the
  very sample after it (the gate);
- the master gain (the software volume stage), ramped over one period, then the
  soft limiter (its numpy path: ``SoftLimiter(kernel=None)``).

:class:`NumpyMixer` is a :class:`~huxleyd.audio.mixer.Mixer` (same request fields,
same channels' fields, same idle test) whose :meth:`~NumpyMixer.mix` is numpy.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from huxleyd.audio.channel import SourceChannel
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.types import SourceName
from huxleyd.pcm import Float32Array, db_to_gain

Fades = tuple[Float32Array, Float32Array, Float32Array]


class OracleChannel(SourceChannel):
    """A source channel with the arithmetic the C core does for it, in numpy."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._flush_pending = False

    def render(
        self,
        mix: Float32Array,
        tmp: Float32Array,
        gains: Float32Array,
        fades: Fades,
        *,
        offset: int = 0,
        limit: int | None = None,
    ) -> None:
        """Pull this period's samples, apply the gains and add them into ``mix``.

        ``offset``/``limit`` restrict where and how much may be pulled (the
        earcon-before-speech gate). ``fades`` are the (fade_out, fade_in, linear 0→1)
        shapes of one period; ``tmp`` and ``gains`` are scratch."""
        self.pull_start = self.ring.read_pos
        self.pull_offset = offset
        self.pull_count = 0
        room = self._period - offset if limit is None else min(self._period - offset, limit)
        self.skip_from = self.skip_to = 0
        start_gain, end_gain = self._step_gains()  # the gains first, as the C core
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

    def _transport(self, room: int, fades: Fades) -> tuple[int, Float32Array | None]:
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


class NumpyMixer(Mixer):
    """The Mixer with numpy arithmetic: the oracle (its limiter is numpy too)."""

    channel_class = OracleChannel

    def __init__(self, rings: dict[SourceName, SampleRing], **kwargs: Any) -> None:
        super().__init__(rings, **{**kwargs, "kernel": None})
        n = self.period_samples
        self._tmp: Float32Array = np.zeros(n, dtype=np.float32)
        self._gains: Float32Array = np.zeros(n, dtype=np.float32)

    def channel(self, name: SourceName) -> OracleChannel:
        return cast(OracleChannel, self.channels[name])

    def mix(self, out: Float32Array) -> None:
        """Fill ``out`` (one period) with the mixed, gained and limited sources."""
        out.fill(0.0)
        tmp, gains, fades = self._tmp, self._gains, self.fades
        earcon, speech = self.channel("earcon"), self.channel("speech")
        earcon.render(out, tmp, gains, fades)
        offset, limit = self._speech_window(speech, earcon)
        speech.render(out, tmp, gains, fades, offset=offset, limit=limit)
        self.channel("content").render(out, tmp, gains, fades)
        self.channel("comms").render(out, tmp, gains, fades)
        self._apply_master(out)
        self.limiter.process(out)

    def _speech_window(
        self, speech: OracleChannel, earcon: OracleChannel
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
        unit = self.fades[2]
        if start == end:
            if end != 1.0:
                np.multiply(out, np.float32(end), out=out)
            return
        np.multiply(unit, np.float32(end - start), out=self._gains)
        self._gains += np.float32(start)
        np.multiply(out, self._gains, out=out)
