"""Hands-free under faults: no wake-word package, a detector that raises, an
unreadable mute file, a speaker xrun under the echo canceller.

Each degrades, never stops the daemon or the button, and says so.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.audio import echo
from huxleyd.handsfree.listener import WakeListener
from huxleyd.handsfree.mutefile import read_muted, write_muted
from huxleyd.sim.scenario import Scenario
from huxleyd.turns.state import TurnSource
from tests.audio.test_echo import RATE, STEP, cancel, erle, far_end, heard
from tests.e2e.harness import Rig, speech, turn, until
from tests.e2e.test_wake import WAKE, mic_open


async def test_without_the_wake_word_package_the_daemon_runs_on_the_button_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pymicro_wakeword", None)  # no wheel for this platform
    async with Rig(tmp_path, Scenario(turns=(turn(speech(200)),)), extra_tables=WAKE) as rig:
        problems = rig.rt.degraded.lines()
        assert any("wake word off: pymicro-wakeword is not installed" in p for p in problems)
        checks = {c.name: c for c in await RuntimeControl(rig.rt).doctor()}
        assert checks["wake word"].status == "warn", checks["wake word"]
        assert "not running" in checks["wake word"].detail
        assert not mic_open(rig)  # nothing listens between presses
        await rig.say_into_mic()
        await until(lambda: rig.coordinator.last_turn is not None, "the button's turn")
        last = rig.coordinator.last_turn
        assert last is not None and last.source is TurnSource.PTT


class FlakyDetector:
    """Raises on its first frame, then hears the wake word in every third frame."""

    name = "flaky"

    def __init__(self) -> None:
        self.frames = 0

    def feed(self, pcm: bytes, captured_at: float) -> bool:
        self.frames += 1
        if self.frames == 1:
            raise RuntimeError("the model tripped")
        return self.frames % 3 == 0

    def played(self, pcm: bytes, dac_at: float) -> None:
        pass

    def reset(self) -> None:
        pass


async def test_a_detector_that_raises_is_logged_and_listening_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio

    woke: list[float] = []
    listener = WakeListener(FlakyDetector(), woke.append)
    listener.start(asyncio.get_running_loop())
    try:
        with caplog.at_level(logging.ERROR):
            for i in range(6):
                listener.hear(bytes(640), i - 0.02, float(i))
            assert await asyncio.to_thread(listener.wait_drained, 30.0)
            await until(lambda: len(woke) == 2, "two detections after the failure")
    finally:
        listener.close()
    assert woke == [2.0, 5.0]
    assert "wake_detector_failed" in caplog.text and "the model tripped" in caplog.text


@pytest.mark.parametrize(
    "make",
    [lambda p: p.mkdir(), lambda p: p.write_bytes(b"\xff\xfe"), lambda p: p.write_text("maybe")],
    ids=["directory", "not-text", "not-on-or-off"],
)
def test_an_unreadable_mute_file_starts_unmuted_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, make: object
) -> None:
    path = tmp_path / "muted"
    make(path)  # type: ignore[operator]
    with caplog.at_level(logging.WARNING):
        assert read_muted(path) is False
    assert "mute_state_unreadable" in caplog.text


def test_a_mute_that_cannot_be_saved_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        write_muted(tmp_path / "no-such-dir" / "muted", True)
    assert "mute_state_not_saved" in caplog.text


@pytest.mark.skipif(not echo.AVAILABLE, reason="built without libspeexdsp-dev")
def test_an_xrun_moves_the_anchor_not_the_alignment() -> None:
    # The speaker stalls for 300 ms after 3 s (longer than the filter's tail):
    # the DAC times jump, the room hears silence meanwhile. Aligned by time the
    # canceller does not notice; aligned by counting samples it would be 300 ms off.
    spoken = far_end()
    gap = int(0.3 * RATE)
    at = 3 * RATE
    timeline = np.concatenate([spoken[:at], np.zeros(gap, dtype=np.int16), spoken[at:]])
    mic = heard(timeline, delay_ms=20, gain_db=-10)
    dac_times = [
        100.0 + (k * STEP + (gap if k * STEP >= at else 0)) / RATE
        for k in range(len(spoken) // STEP)
    ]
    by_time = cancel(spoken, mic, dac_times)
    by_count = cancel(spoken, mic, [100.0 + k * STEP / RATE for k in range(len(spoken) // STEP)])
    after = slice(at + gap + 2 * RATE, None)  # from 2 s after the stall
    time_erle, _ = erle(mic[after], by_time[after])
    count_erle, _ = erle(mic[after], by_count[after])
    print(f"after an xrun: aligned by DAC time {time_erle:.1f} dB, by count {count_erle:.1f} dB")
    assert time_erle >= 25.0
    assert count_erle < time_erle - 10.0
