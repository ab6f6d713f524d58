"""The engine's side of a timed output alone: cuts, the DAC clock, the device's counters.

:class:`~huxleyd.audio.timed.TimedOutput` over the real mixer and playout clock, on
the WAV backend that is also an ``OutputClock`` (``tests/fakes/audio_backends.py``:
its DAC trails the writes by a set delay, as the C callback's does). Each period is
driven as the audio thread's ``_play_timed`` drives it (the whole engine on it:
test_source.py, test_engine_thread.py; on the clocked card: test_clockcard.py).
The last test runs it on the real ``OutputClock``, the C callback backend, on the
clocked card in a child process (``tests/fakes/clockcard_alone.py``, ``timedout``).
"""

from __future__ import annotations

import numpy as np
import pytest

from huxleyd.audio.backends.base import DeviceFormat
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.playout import PeriodPulls, PlayoutClock
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.timed import DeviceCounts, TimedOutput, lead_s
from huxleyd.audio.types import SOURCES
from huxleyd.pcm import RATE_HZ
from tests.fakes.audio_backends import TimedWavBackend
from tests.fakes.children import run_json_child
from tests.fakes.clockcard import ClockCard, child_env

N = 480
"""A period of 20 ms at 24 kHz: the WAV backend's device runs at the mix rate,
so a device frame is a mixer sample."""
DAC_DELAY = 2 * N
FADE = 120
SPEECH = SOURCES.index("speech")


class Rig:
    """A timed output on the timed WAV backend, over a real mixer and playout clock.

    The backend's DAC moves when asked where it is (once a period, by ``publish``):
    the tests count where it is rather than ask it a second time."""

    def __init__(self, backend: TimedWavBackend | None = None) -> None:
        self.rings = {name: SampleRing(RATE_HZ, name=name) for name in SOURCES}
        self.mixer = Mixer(self.rings, period_samples=N, rate_hz=RATE_HZ, kernel=KERNEL)
        self.playout = PlayoutClock(
            [self.mixer.channels[name] for name in SOURCES], period_samples=N
        )
        self.backend = backend or TimedWavBackend(dac_delay_frames=DAC_DELAY, fade_frames=FADE)
        self.backend.open(period_ms=20)
        self.timed = TimedOutput(self.backend, self.playout)
        self.timed.opened(frames=N, delay_frames=0, lead_frames=3 * N)
        self._mix = np.zeros(N, dtype=np.float32)

    def speak(self, samples: int) -> None:
        self.rings["speech"].write(np.full(samples, 1000, dtype=np.int16))

    def period(self, *, write: bool = True) -> None:
        """One period as the audio thread plays a timed output: the cut read before
        the mix, recorded before the write, acknowledged after it, then published."""
        seq = self.timed.pending_cut()
        if write:
            self.mixer.mix(self._mix)
            self.playout.record_period(self.backend.written_frames())
            pcm = (self._mix * 32767).astype(np.int16)[:, None]
            self.backend.write(pcm)
        else:
            self.mixer.skip_idle()
            self.playout.record_period(-1)
        self.timed.acknowledge(seq)
        self.timed.publish()

    def played(self) -> int:
        return self.mixer.channels["speech"].playout.played_pos


def test_what_reached_the_dac_is_what_speech_has_played() -> None:
    rig = Rig()
    rig.speak(10 * N)
    for _ in range(4):
        rig.period()
    assert rig.played() == 4 * N - DAC_DELAY  # the DAC trails the mix, not the mix itself
    rig.period(write=False)  # idle: the DAC plays out what it had
    assert rig.played() == 4 * N


def test_a_cut_answers_each_sources_position_at_the_fades_end() -> None:
    rig = Rig()
    rig.speak(10 * N)
    for _ in range(4):
        rig.period()
    positions = rig.timed.cut()  # the DAC is at 4 * N - DAC_DELAY
    assert positions is not None
    assert positions[SPEECH] == 4 * N - DAC_DELAY + FADE  # speech stops being heard there
    assert [p for i, p in enumerate(positions) if i != SPEECH] == [0] * (len(SOURCES) - 1)


def test_a_cut_answers_from_the_periods_not_recorded_yet() -> None:
    rig = Rig()
    rig.speak(10 * N)
    for _ in range(2):
        rig.period()
    rig.period(write=False)  # the DAC is at 2 * N: every recorded period was heard
    # a period written at 2 * N that the playout clock has not recorded (the C
    # feeder's undrained report), speech from ring sample 5000, 100 into it
    starts = tuple(5000 if i == SPEECH else 0 for i in range(len(SOURCES)))
    offsets = tuple(100 if i == SPEECH else 0 for i in range(len(SOURCES)))
    counts = tuple(N - 100 if i == SPEECH else 0 for i in range(len(SOURCES)))
    rig.timed.unrecorded = lambda: [PeriodPulls(2 * N, starts, offsets, counts)]
    positions = rig.timed.cut()
    assert positions is not None
    assert positions[SPEECH] == 5000 + FADE - 100


def test_a_cut_is_acknowledged_once_by_the_mix_after_it() -> None:
    rig = Rig()
    rig.speak(10 * N)
    rig.period()
    assert rig.timed.pending_cut() == 0
    assert rig.backend.drops() == (0, 0, 0)  # no cut asked: nothing resumed
    rig.timed.cut()
    assert rig.timed.pending_cut() == 1
    assert not rig.timed.settled()  # a cut is pending
    rig.period()  # the mix that took the flush in: the callback plays from its end
    assert rig.backend.drops() == (1, FADE, 2 * N)
    rig.period()
    assert rig.backend.drops() == (1, FADE, 2 * N)  # not resumed a second time


def test_what_a_cut_dropped_is_recorded_as_skips_never_as_heard() -> None:
    rig = Rig()
    rig.speak(10 * N)
    for _ in range(3):
        rig.period()
    fade_end = 3 * N - DAC_DELAY + FADE
    rig.timed.cut()
    rig.period()  # acknowledged at 4 * N: [fade_end, 4 * N) was mixed, then dropped
    skips = rig.mixer.channels["speech"].playout.skips
    assert skips.since(0) == [(fade_end, 4 * N)]
    assert rig.played() == 4 * N - DAC_DELAY


def test_settled_once_no_cut_is_pending_and_every_written_frame_was_heard() -> None:
    rig = Rig()
    rig.speak(2 * N)
    rig.period()
    rig.period()
    assert not rig.timed.settled()  # 2 * N written, the DAC behind them
    rig.period(write=False)
    assert rig.timed.settled()


def test_the_lead_is_reached_when_enough_is_queued_ahead_of_the_dac() -> None:
    rig = Rig()
    rig.speak(10 * N)
    rig.timed.lead_frames = DAC_DELAY
    rig.period()
    assert not rig.timed.lead_reached()  # N queued ahead of the DAC
    rig.period()
    assert rig.timed.lead_reached()


def test_a_reopen_starts_cut_numbers_and_positions_again() -> None:
    rig = Rig()
    rig.speak(10 * N)
    rig.period()
    rig.timed.cut()
    rig.backend.open(period_ms=20)  # the device's own counts restart at 0
    rig.timed.opened(frames=N, delay_frames=0, lead_frames=N)
    assert rig.timed.pending_cut() == 0 and rig.timed.lead_frames == N
    rig.period()
    rig.period(write=False)
    assert rig.timed.settled()  # the old cut is not waited for any more
    assert rig.backend.drops() == (0, 0, 0)


class CountingWavBackend(TimedWavBackend):
    """The timed WAV backend with counters a test sets, restarted by each open as
    the C callback's are (no card here to make real xruns: test_clockcard.py)."""

    def open(self, *, period_ms: int) -> DeviceFormat:
        self.xruns, self.gaps, self.gap_ms = (0, 0), 0, 0.0
        self.per_source = (0,) * len(SOURCES)
        return super().open(period_ms=period_ms)

    def xrun_counts(self) -> tuple[int, int]:
        return self.xruns

    def dropouts(self) -> int:
        return self.gaps

    def dropout_ms(self) -> float:
        return self.gap_ms

    def source_dropouts(self) -> tuple[int, ...]:
        return self.per_source


def test_the_devices_counters_are_kept_across_a_close_and_summed() -> None:
    backend = CountingWavBackend(dac_delay_frames=DAC_DELAY)
    rig = Rig(backend)
    backend.xruns, backend.gaps, backend.gap_ms = (2, 1), 3, 7.5
    backend.per_source = (1, 2, 0, 0)
    rig.timed.keep_counts()  # about to close
    backend.open(period_ms=20)  # the new stream counts from 0
    backend.xruns, backend.gaps, backend.gap_ms = (1, 0), 1, 2.5
    backend.per_source = (0, 1, 0, 0)
    assert rig.timed.counts(open_=True) == DeviceCounts(
        underruns=3, overruns=1, dropouts=4, dropout_ms=10.0, source_dropouts=[1, 3, 0, 0]
    )
    closed = rig.timed.counts(open_=False)  # the open device left out
    assert closed == DeviceCounts(2, 1, 3, 7.5, [1, 2, 0, 0])
    closed.source_dropouts[0] = 99  # a copy: the kept counts do not move
    assert rig.timed.counts(open_=False).source_dropouts == [1, 2, 0, 0]


def test_the_lead_is_the_settings_unless_the_device_needs_more() -> None:
    settings = AudioSettings(output_lead_ms=30)

    def device(latency_s: float) -> DeviceFormat:
        return DeviceFormat(RATE_HZ, RATE_HZ, 1, 1, latency_s, 0.0, paced=True)

    assert lead_s(settings, device(0.010)) == 0.030
    assert lead_s(settings, device(0.040)) == 0.040 * 1.5  # a widened period's whole callback


@pytest.mark.clockcard
def test_on_the_c_callback_what_a_cut_answered_is_where_its_drop_begins(card: ClockCard) -> None:
    """1 s of speech on the C callback backend, cut once half of it was heard: the
    dropped span the device reports begins at the position the cut answered, and the
    rest is accounted for once the device settles."""
    got = run_json_child(
        ["-m", "tests.fakes.clockcard_alone", "timedout", "48000"],
        child_env(card.directory),
        timeout_s=120,
    )
    answered, written = got["answered"], got["written"]
    assert answered is not None and answered >= written // 2
    [(dropped_from, dropped_to)] = got["skips"]  # one cut: one span never heard
    assert dropped_from == answered < dropped_to <= written
    assert got["heard"] == written and got["settled"]
