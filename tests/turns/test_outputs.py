"""TurnOutputs: the activity the LEDs follow, named earcons, the turn journal."""

from __future__ import annotations

import logging

import pytest

from huxleyd.audio.types import Earcon
from huxleyd.turns.news import ActivityChanged, TurnEnded, TurnNews
from huxleyd.turns.outputs import Activity, TurnOutputs
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnSource
from tests.fakes.turn_ports import RecordingAudio

LISTEN = b"\1\0" * 10


def outputs(
    earcons: dict[str, bytes] | None = None,
) -> tuple[TurnOutputs, RecordingAudio, list[str], list[TurnRecord]]:
    audio = RecordingAudio()
    shown: list[str] = []
    journal: list[TurnRecord] = []

    def publish(news: TurnNews) -> None:
        if isinstance(news, ActivityChanged):
            shown.append(news.activity)
        elif isinstance(news, TurnEnded):
            journal.append(news.turn)

    out = TurnOutputs(
        audio, earcons if earcons is not None else {"listen_start": LISTEN}, publish=publish
    )
    return out, audio, shown, journal


def test_an_earcon_plays_by_name_with_its_ordering() -> None:
    out, audio, _, _ = outputs()
    out.earcon(Earcon.LISTEN_START, before_speech=False)
    out.earcon(Earcon.LISTEN_START, before_speech=True)
    assert audio.earcons == [(LISTEN, False), (LISTEN, True)]


def test_an_earcon_the_persona_lacks_is_silence() -> None:
    out, audio, _, _ = outputs({"too_short": b""})
    out.earcon(Earcon.TIMER, before_speech=True)  # not in the palette
    out.earcon(Earcon.TOO_SHORT, before_speech=True)  # an empty file
    assert audio.earcons == []


def test_earcons_are_read_at_each_play_not_copied() -> None:
    earcons: dict[str, bytes] = {}
    out, audio, _, _ = outputs(earcons)
    earcons["error"] = b"\2\0" * 4  # the persona was reloaded
    out.earcon(Earcon.ERROR, before_speech=False)
    assert audio.earcons == [(b"\2\0" * 4, False)]


def test_activity_changed_is_published_on_changes_only() -> None:
    out, _, shown, _ = outputs()
    initial = out.activity
    assert initial is Activity.IDLE
    out.show(Activity.IDLE)
    out.show(Activity.LISTENING)
    out.show(Activity.LISTENING)
    out.show(Activity.THINKING)
    assert shown == [Activity.LISTENING, Activity.THINKING]
    assert out.activity == Activity.THINKING


def test_the_journal_line_carries_the_timings(caplog: pytest.LogCaptureFixture) -> None:
    out, _, _, journal = outputs()
    turn = TurnRecord(
        source=TurnSource.PTT,
        committed_at=10.0,
        first_audio_at=10.5,
        first_played_at=10.52,
        outcome=TurnOutcome.ANSWERED,
        tools=["info", "chime"],
    )
    with caplog.at_level(logging.INFO, logger="huxleyd.turns"):
        out.journal(turn)
    assert journal == [turn]
    [line] = [r.getMessage() for r in caplog.records if "turn_done" in r.getMessage()]
    assert "outcome=answered" in line and "tools=info,chime" in line
    assert "commit_to_first_audio_ms=500.0" in line
    assert "first_audio_to_playing_ms=20.0" in line
