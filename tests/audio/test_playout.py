"""The playout accounting on its own: the thread's clock, the asyncio tracker,
and the one record they share (no engine, no mixer)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.audio.playout import PeriodPulls, PlayoutClock, PlayoutTracker, SourcePlayout

N = 480


@dataclass
class Pull:
    """What the mixer publishes about one source's period."""

    pull_start: int = 0
    pull_offset: int = 0
    pull_count: int = 0
    playout: SourcePlayout = field(default_factory=SourcePlayout)

    def period(self, start: int, count: int, offset: int = 0) -> None:
        self.pull_start, self.pull_count, self.pull_offset = start, count, offset


def test_played_pos_trails_the_mix_by_the_device_latency() -> None:
    pull = Pull()
    clock = PlayoutClock([pull], period_samples=N)
    clock.latency_samples = N + 100
    for period in range(3):
        pull.period(period * N, N)
        clock.record_period()
    assert pull.playout.played_pos == 3 * N - (N + 100)
    pull.period(3 * N, 200, offset=40)  # ran dry: 200 samples, 40 into the period
    clock.record_period()
    assert pull.playout.played_pos == 3 * N - 100 + 0  # that period is not heard yet
    pull.period(3 * N + 200, 0)
    clock.record_period()
    assert pull.playout.played_pos == 3 * N + 200  # all of it, then nothing more


def test_played_pos_never_goes_back_when_the_latency_estimate_grows() -> None:
    pull = Pull()
    clock = PlayoutClock([pull], period_samples=N)
    for period in range(4):
        pull.period(period * N, N)
        clock.record_period()
    assert pull.playout.played_pos == 4 * N
    clock.latency_samples = 2 * N
    pull.period(4 * N, N)
    clock.record_period()
    assert pull.playout.played_pos == 4 * N


def test_a_timed_cut_records_what_it_dropped_as_skips() -> None:
    speech, content = Pull(), Pull()
    clock = PlayoutClock([speech, content], period_samples=N)
    clock.start_device(frames=N, delay_frames=0)
    for period in range(3):
        speech.period(period * N, N)
        content.period(1000 + period * N, N)
        clock.record_period(period * N)
    clock.record_dropped(N + 100, 3 * N)
    assert speech.playout.skips.since(0) == [(N + 100, 3 * N)]
    assert content.playout.skips.since(0) == [(1000 + N + 100, 1000 + 3 * N)]
    clock.publish_device(N + 100)
    assert (speech.playout.played_pos, content.playout.played_pos) == (N + 100, 1000 + N + 100)


def test_the_tracker_publishes_the_lowest_target_and_the_thread_wakes_for_it() -> None:
    record = SourcePlayout()
    tracker = PlayoutTracker(record)
    assert record.drain_target == -1 and not record.wake_due()
    tracker.add_target(900)
    tracker.add_target(500)
    assert record.drain_target == 500
    record.played_pos = 499  # the thread's write
    assert not record.wake_due() and not tracker.heard(500)
    record.played_pos = 500
    assert record.wake_due() and tracker.heard(500)
    tracker.remove_target(500)
    assert record.drain_target == 900 and not record.wake_due()
    tracker.remove_target(900)
    assert record.drain_target == -1


def test_an_item_heard_counts_neither_skips_nor_what_is_still_queued() -> None:
    record = SourcePlayout()
    tracker = PlayoutTracker(record)
    tracker.ledger.note_write("a", 0, 2400)
    tracker.ledger.note_write("b", 2400, 4800)
    record.skips.record(1200, 2400)  # a flush dropped the end of "a"
    record.played_pos = 3000
    assert tracker.played_samples("a") == 1200
    assert tracker.played_samples("b") == 600
    assert tracker.unheard(4800) == 1800
    tracker.heard_floor = 3600  # a cut's fade ends there, before the DAC says so
    assert tracker.played_samples("b") == 1200
    assert tracker.played_samples("unknown") == 0


# one period of two sources: (pull count, offset) each, and whether it was written
period_pulls = st.tuples(
    st.integers(0, N), st.integers(0, N), st.integers(0, N), st.integers(0, N), st.booleans()
)


@settings(max_examples=200, deadline=None)
@given(
    periods=st.lists(period_pulls, min_size=1, max_size=12),
    recorded=st.integers(0, 12),
    repeated=st.integers(0, 3),
    frames=st.sampled_from([N, 2 * N, 441]),
    delay=st.integers(0, 50),
    probe=st.integers(-60, 12 * 2 * N + 60),
)
def test_a_cut_answers_from_unrecorded_periods_as_if_they_were_recorded(
    periods: list[tuple[int, int, int, int, bool]],
    recorded: int,
    repeated: int,
    frames: int,
    delay: int,
    probe: int,
) -> None:
    """Issue 26: the C feeder's reports not yet drained reach a cut as
    :class:`PeriodPulls` beside the history (possibly repeating its newest, as the
    log keeps a report until it was recorded). The answer is the one the clock gives
    once every period is recorded: the same arithmetic, never a second copy of it."""
    sources = [Pull(), Pull()]
    full, held = PlayoutClock(sources, period_samples=N), PlayoutClock(sources, period_samples=N)
    for clock in (full, held):
        clock.start_device(frames=frames, delay_frames=delay)
    recorded = min(recorded, len(periods))
    pending: list[PeriodPulls] = []
    ring, dev = [0, 0], 0
    for k, (count_a, offset_a, count_b, offset_b, written) in enumerate(periods):
        pulls = [(count_a, min(offset_a, N - count_a)), (count_b, min(offset_b, N - count_b))]
        for pull, position, (count, offset) in zip(sources, ring, pulls, strict=True):
            pull.period(position, count, offset)
        start = dev if written else -1
        full.record_period(start)
        if k < recorded:
            held.record_period(start)
        if k >= recorded - repeated:  # the newest recorded may still be in the log
            pending.append(
                PeriodPulls(
                    start,
                    tuple(ring),
                    tuple(offset for _, offset in pulls),
                    tuple(count for count, _ in pulls),
                )
            )
        ring = [position + count for position, (count, _) in zip(ring, pulls, strict=True)]
        dev += frames if written else 0
    assert held.positions_at(probe, pending) == full.positions_at(probe)
