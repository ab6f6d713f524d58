"""The real-time tests' account: a session that skipped too many for load fails."""

from __future__ import annotations

import numpy as np

from tests.fakes.clockcard import longest_gap
from tests.fakes.realtime import LOAD_SKIP_SHARE, Ledger


def test_a_session_whose_real_time_tests_mostly_skipped_for_load_fails() -> None:
    ledger = Ledger(first=["a", "b"], retried={"c": 2})
    assert ledger.verdict() is None
    ledger.skipped["d"] = "3 card xruns"
    assert LOAD_SKIP_SHARE >= 1 / 4 and ledger.verdict() is None  # one in four is load
    ledger.skipped["e"] = "the card's capture overran"
    why = ledger.verdict()
    assert why is not None and "2 of 5 real-time tests skipped for load" in why
    assert "d: 3 card xruns" in why and "proves nothing" in why
    assert ledger.summary() == (
        "real-time tests: 2 judged at the first try, 1 after a retry, 2 skipped for load"
    )


def test_no_real_time_test_ran_is_no_verdict() -> None:
    assert Ledger().verdict() is None


def test_a_gap_in_a_tone_is_found_and_a_zero_crossing_is_not() -> None:
    rate = 48_000
    tone = (16_000 * np.sin(2 * np.pi * 440 * np.arange(rate // 10) / rate)).astype(np.int16)
    assert longest_gap(tone, 0, len(tone)) <= 2  # a -6 dBFS tone: only its zero crossings
    tone[1000:1480] = 0  # 10 ms of silence: the speaker fed zeros
    assert longest_gap(tone, 0, len(tone)) >= 480
    assert longest_gap(tone, 2000, len(tone)) <= 2


def test_the_speakers_silences_are_counted_from_the_recording() -> None:
    from tests.fakes.clockcard import speaker_silences

    rate = 48_000
    tone = (16_000 * np.sin(2 * np.pi * 440 * np.arange(rate) / rate)).astype(np.int16)
    recording = np.concatenate([np.zeros(rate // 2, np.int16), tone, np.zeros(rate, np.int16)])
    assert speaker_silences(recording, rate_hz=rate) == (0, 0.0)  # lead-in and tail are not
    recording[rate : rate + 960] = 0  # 20 ms dropout
    recording[rate + 4800 : rate + 4800 + 120] = 0  # 2.5 ms: one short period
    count, ms = speaker_silences(recording, rate_hz=rate)
    assert count == 2 and 22 <= ms <= 23
