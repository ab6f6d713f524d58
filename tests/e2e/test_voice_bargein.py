"""Voice barge-in end to end, on the clocked fake card (issue 29).

The real daemon (C callback backend, simulator, wake word on, echo canceller
``auto``) answers a wake turn with a long reply; a few seconds into it the
user says "okay nabu" into the mic, which also hears the reply through the
card's room (``tests/fakes/voice_bargein.py``). The reply is cut: the speaker
goes silent well before the reply's end, the daemon says so (``barge_in``)
and the interrupted turn's journal line names its source. How long the cut
takes is the bench's (``python -m bench handsfree``), never asserted here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from huxleyd.audio import echo
from tests.fakes.clockcard import ClockCardUnavailable, build_plugin
from tests.fakes.realtime import RealTime
from tests.fakes.voice_bargein import REPLY_MS, VoiceCut, voice_cut

pytest.importorskip("pymicro_wakeword")
pytestmark = [
    pytest.mark.clockcard,
    pytest.mark.skipif(not echo.AVAILABLE, reason="built without libspeexdsp-dev"),
]


def test_okay_nabu_over_the_devices_own_reply_cuts_it(tmp_path: Path, realtime: RealTime) -> None:
    try:
        build_plugin()
    except ClockCardUnavailable as exc:
        pytest.skip(str(exc))
    runs = iter(range(10))

    def attempt() -> tuple[VoiceCut, str | None]:
        directory = tmp_path / f"run{next(runs)}"
        directory.mkdir()
        cut = voice_cut(directory)
        return cut, None if cut.kept else "an xrun, or a gap in the reply before the cut"

    cut = realtime.kept(attempt)
    assert cut.barged, cut.log[-3000:]
    assert "source=wake outcome=interrupted" in cut.log
    # silent long before the reply would have ended by itself
    assert cut.silent_s is not None
    assert cut.silent_s < cut.reply_start_s + REPLY_MS / 1000 - 3.0
    assert cut.silent_s > cut.wake_end_s  # the cut came after the wake word, not before
