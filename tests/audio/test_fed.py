"""The audio thread's side of the C feeder alone: when there is one, what it
records of a mix it runs, and what it does when it cannot run.

:mod:`huxleyd.audio.fed` over the real parts: the ``_rt`` extension, the mixer on
source rings in C, the playback chain, the WAV and C callback backends (unopened:
there is no card in this process). A feeder that runs needs an open ``_rt.Output``
on a card: the last test runs one on the clocked card, in a child process
(``tests/fakes/clockcard_alone.py``, mode ``fedout``). The engine over it:
test_clockcard.py; the feeder's own pieces against the Python mix: test_feeder.py.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.audio.backends.callback_backend import RT, CallbackBackend, load_rt
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.chains import PlaybackChain
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.fed import FedOutput, feeder_module
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import SampleRing, SharedSampleRing
from huxleyd.audio.types import SOURCES, SourceName
from huxleyd.pcm import RATE_HZ
from tests.fakes.children import run_json_child
from tests.fakes.clockcard import ClockCard, child_env

rt = pytest.importorskip("huxleyd.audio._rt")
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the C kernel is not built here")

N = 480
"""A period of 20 ms at the mix rate."""
CARD = DeviceFormat(RATE_HZ, 48_000, 1, 2, 0.005, 0.005, paced=True)
"""A card at 48 kHz, stereo: the feeder would resample and convert."""


def mixer_on(*, shared: bool) -> Mixer:
    rings: dict[SourceName, SampleRing] = {
        name: SharedSampleRing(rt.SourceRing(RATE_HZ), name=name)
        if shared
        else SampleRing(RATE_HZ, name=name)
        for name in SOURCES
    }
    return Mixer(rings, period_samples=N, rate_hz=RATE_HZ, kernel=KERNEL)


def fed_on(mixer: Mixer) -> FedOutput:
    assert KERNEL is not None
    playout = PlayoutClock([mixer.channels[name] for name in SOURCES], period_samples=N)
    return FedOutput(load_rt(), KERNEL, mixer, playout, LevelMeter(0.02))


def test_the_feeder_feeds_only_the_c_callbacks_speaker_with_the_kernel_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert feeder_module(WavBackend(), KERNEL) is None  # the audio thread mixes for a WAV file
    assert feeder_module(CallbackBackend(), None) is None  # no C mix to hand over
    chosen = feeder_module(CallbackBackend(), KERNEL)
    assert chosen is not None and chosen.Feeder is rt.Feeder
    monkeypatch.setitem(sys.modules, RT, None)  # an install without the extension
    assert feeder_module(CallbackBackend(), KERNEL) is None


def test_the_feeder_needs_every_source_ring_in_c() -> None:
    with pytest.raises(ValueError, match="SharedSampleRing"):
        fed_on(mixer_on(shared=False))


@pytest.mark.parametrize("output", ["closed backend", "unopened Output"])
def test_a_feeder_that_cannot_start_leaves_the_mix_to_the_audio_thread(output: str) -> None:
    mixer = mixer_on(shared=True)
    fed = fed_on(mixer)
    chain = PlaybackChain(CARD, period_ms=20, meter=LevelMeter(0.02))
    stream = (
        CallbackBackend().output_stream()  # None: its device is not open
        if output == "closed backend"
        else rt.Output.__new__(rt.Output)  # an Output whose device never opened
    )
    assert not fed.start(stream, chain, rate_hz=CARD.output_rate_hz, lead_frames=2 * N)
    assert fed.error is not None and "open _rt.Output" in fed.error
    assert fed.who_mixes(False) == f"mixed by the audio thread, the C feeder failed: {fed.error}"
    assert not fed.running and not fed.alive()
    assert mixer.doorbell.on_ring is None  # requests are not published to a feeder
    # the audio thread mixes the very rings the feeder would have read
    mixer.channels["speech"].ring.write(np.full(N, 8000, dtype=np.int16))
    out = np.zeros(N, dtype=np.float32)
    mixer.mix(out)
    assert np.abs(out).max() > 0.1
    assert mixer.channels["speech"].ring.read_pos == N


def test_a_feeder_not_running_reports_nothing_and_hands_nothing_back() -> None:
    mixer = mixer_on(shared=True)
    fed = fed_on(mixer)
    before = mixer.core_state()
    assert fed.drain(None) == 0
    assert fed.pending() == [] and fed.status() == {}
    assert fed.late_sources() == (0, 0.0)
    assert (fed.idle(), fed.acked()) == (False, 0)
    assert fed.pulled == dict.fromkeys(fed.pulled, False) and set(fed.pulled) == set(SOURCES)
    fed.publish()
    fed.wake()
    fed.stop()  # nothing to join: the mixer's state stays the Python side's
    assert mixer.core_state() == before
    assert fed.who_mixes(True) == "mixed by the C feeder"


@pytest.mark.clockcard
def test_a_running_feeder_hands_every_period_it_mixed_to_the_playout_clock(
    card: ClockCard,
) -> None:
    """1 s of speech through a feeder on the clocked card's speaker, at a master gain
    asked after the start, drained as the audio thread drains it; then stopped."""
    got = run_json_child(
        ["-m", "tests.fakes.clockcard_alone", "fedout", "48000"],
        child_env(card.directory),
        timeout_s=120,
    )
    assert got["started"] and got["who_mixes"] == "mixed by the C feeder"
    assert got["hooked"]  # each request is published to the feeder
    assert got["read"] == got["written"] == got["speech_end"]  # all of it, and recorded so
    assert got["drained"] == got["recorded"] == got["status_periods"] > 0  # none lost
    assert got["pulled"] == {"speech": True, "earcon": False, "content": False, "comms": False}
    assert 0.10 < got["peak"] < 0.13  # -6 dBFS at a gain of 0.25: the request reached it
    assert got["after_stop"] == {"running": False, "unhooked": True}
    # the Python mix carries on where the feeder left: the ring and the gain it reached
    assert got["python_mix"] == {"start": got["written"], "count": 480}
    assert 0.10 < got["python_peak"] < 0.13
