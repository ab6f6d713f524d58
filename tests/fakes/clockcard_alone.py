"""Audio parts alone on the clocked fake card, in a child process (``python -m tests.fakes.clockcard_alone``).

As :mod:`tests.fakes.clockcard_child` (whose settings and tone it shares), but with
no engine and no audio thread: a test drives one part by hand on the C callback
backend's open speaker, as the audio thread would. The parent writes the card's
``.asoundrc`` and runs this module with ``HOME`` pointing at it; each mode prints
one JSON object.

Modes:

- ``fedout <rate>``: the C feeder (:class:`~huxleyd.audio.fed.FedOutput`): 1 s of
  speech is written at a master gain of 0.25 (asked after the start) and the
  feeder's reports drained until its ring is read to the end; then the feeder
  stops and the mix comes back to Python. Reports what the drains recorded and
  what the mixer carries on from.
- ``timedout <rate>``: a :class:`~huxleyd.audio.timed.TimedOutput`, periods played
  as the audio thread's ``_play_timed`` plays them (no feeder): 1 s of speech, cut
  once half of it was heard, played on to the end. Reports what the cut answered,
  the skips recorded and what was heard.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.audio.backends.callback_backend import CallbackBackend, load_rt
from huxleyd.audio.chains import PlaybackChain
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.factory import callback_backend
from huxleyd.audio.fed import FedOutput
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import SampleRing, SharedSampleRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.timed import TimedOutput, lead_s
from huxleyd.audio.types import SOURCES, SourceName
from tests.fakes.clockcard_child import RATE_IN_HZ, make_settings, tone

N = RATE_IN_HZ // 50
"""A period of 20 ms at the mix rate."""
BOUND_S = 20.0
"""How long a mode waits for the card at most: a bound on a hang, not a timing."""


@dataclass
class Card:
    """The callback backend opened on the card, and a mixer with its playout clock."""

    settings: AudioSettings
    backend: CallbackBackend
    fmt: DeviceFormat
    rings: dict[SourceName, SampleRing]
    mixer: Mixer
    playout: PlayoutClock

    @classmethod
    def open(cls, rate: int, *, shared: bool) -> Card:
        """``shared``: the source rings in C (the feeder reads them), else in Python."""
        settings = make_settings("callback", rate)
        backend = callback_backend(settings)
        fmt = backend.open(period_ms=20)
        rt = load_rt()
        rings: dict[SourceName, SampleRing] = {
            name: SharedSampleRing(rt.SourceRing(2 * RATE_IN_HZ), name=name)
            if shared
            else SampleRing(2 * RATE_IN_HZ, name=name)
            for name in SOURCES
        }
        mixer = Mixer(rings, period_samples=N, rate_hz=RATE_IN_HZ, kernel=KERNEL)
        playout = PlayoutClock([mixer.channels[name] for name in SOURCES], period_samples=N)
        return cls(settings, backend, fmt, rings, mixer, playout)

    def lead_frames(self) -> int:
        return round(lead_s(self.settings, self.fmt) * self.fmt.output_rate_hz)

    def speak(self) -> int:
        """1 s of tone on the speech ring; how many samples."""
        speech = np.frombuffer(tone(1.0), dtype="<i2")
        self.rings["speech"].write(speech)
        return len(speech)


def fed_alone(rate: int) -> dict[str, Any]:
    """The ``fedout`` mode (see the module)."""
    assert KERNEL is not None
    card = Card.open(rate, shared=True)
    meter = LevelMeter(0.02)
    fed = FedOutput(load_rt(), KERNEL, card.mixer, card.playout, meter)
    started = fed.start(
        card.backend.output_stream(),
        PlaybackChain(card.fmt, period_ms=20, meter=LevelMeter(0.02)),
        rate_hz=card.fmt.output_rate_hz,
        lead_frames=card.lead_frames(),
    )
    mixer, ring, channel = card.mixer, card.rings["speech"], card.mixer.channels["speech"]
    hooked = mixer.doorbell.on_ring == fed.publish
    mixer.req_master_gain = 0.25  # a request: published to the feeder, its state after stop
    written = card.speak()
    drained, pulled = 0, dict.fromkeys(fed.pulled, False)
    deadline = time.monotonic() + BOUND_S
    while ring.read_pos < written and time.monotonic() < deadline:
        time.sleep(0.02)  # the feeder is a C thread: no event to wait on
        drained += fed.drain(None)
        pulled = {name: pulled[name] or fed.pulled[name] for name in pulled}
    time.sleep(0.1)
    drained += fed.drain(None)
    result: dict[str, Any] = {
        "started": started,
        "who_mixes": fed.who_mixes(started),
        "hooked": hooked,
        "written": written,
        "read": ring.read_pos,
        "drained": drained,
        "recorded": card.playout.periods,
        "pulled": pulled,
        "speech_end": channel.pull_start + channel.pull_count,
        "peak": meter.peak,
        "status_periods": int(fed.status().get("periods", -1)),
    }
    fed.stop()
    result["after_stop"] = {"running": fed.running, "unhooked": mixer.doorbell.on_ring is None}
    ring.write(np.full(N, 16000, dtype=np.int16))  # the Python mix goes on where the feeder left
    out = np.zeros(N, dtype=np.float32)
    mixer.mix(out)
    result["python_mix"] = {"start": channel.pull_start, "count": channel.pull_count}
    result["python_peak"] = float(np.abs(out).max())
    card.backend.close()
    return result


def timed_alone(rate: int) -> dict[str, Any]:
    """The ``timedout`` mode (see the module)."""
    card = Card.open(rate, shared=False)
    chain = PlaybackChain(card.fmt, period_ms=20, meter=LevelMeter(0.02), kernel=KERNEL)
    timed = TimedOutput(card.backend, card.playout)
    timed.opened(
        frames=chain.buffer.shape[0],
        delay_frames=round(chain.delay_samples * card.fmt.output_rate_hz / RATE_IN_HZ),
        lead_frames=card.lead_frames(),
    )
    written = card.speak()
    heard = card.mixer.channels["speech"].playout
    answered: list[int] | None = None
    idle = 0  # periods in a row the mixer was idle
    deadline = time.monotonic() + BOUND_S
    while not (idle > 1 and timed.settled()) and time.monotonic() < deadline:
        if answered is None and heard.played_pos >= written // 2:
            answered = timed.cut()
        idle = play_timed(card, chain, timed, idle)
        time.sleep(0.005)
    card.backend.close()
    return {
        "written": written,
        "answered": None if answered is None else answered[SOURCES.index("speech")],
        "skips": heard.skips.since(0),
        "heard": heard.played_pos,
        "settled": timed.settled(),
    }


def play_timed(card: Card, chain: PlaybackChain, timed: TimedOutput, idle: int) -> int:
    """One turn of the audio thread's ``_play_timed``: mix ahead to the lead, then
    acknowledge the cut read before the mix and publish; returns the idle streak."""
    mixer, playout = card.mixer, card.playout
    seq = timed.pending_cut()
    for _ in range(4):  # this period, and catching up to the lead
        idle = idle + 1 if mixer.idle() else 0
        if idle > 1:  # idle twice: the resampler's history is zeros too
            mixer.skip_idle()
            playout.record_period(-1)
            break
        mixer.mix(chain.mix)
        playout.record_period(timed.out.written_frames())
        card.backend.write(chain.process())
        if timed.lead_reached():
            break
    timed.acknowledge(seq)
    card.backend.expect_audio(mixer.holding())
    timed.publish()
    return idle


def main(argv: list[str]) -> int:
    mode, rate = argv[0], int(argv[1])
    if mode == "fedout":
        result = fed_alone(rate)
    elif mode == "timedout":
        result = timed_alone(rate)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
