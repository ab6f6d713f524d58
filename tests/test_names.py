"""Names that cross modules are enums whose text is the wire's and the journal's.

LED states, device activities, earcons, turn sources and persona string keys
are ``StrEnum`` s: code compares members, while a journal field, the
control socket's JSON, a file name and a persona key still read the same
text as before. A persona key that names nothing is refused with the file,
the key and the allowed names.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from huxleyd.audio.types import Earcon
from huxleyd.clock import ManualClock
from huxleyd.config.load import PersonaString, load_persona
from huxleyd.control.handler import StatusReport
from huxleyd.control.protocol import ResultReply, parse_reply
from huxleyd.errors import ConfigError
from huxleyd.hardware.led_controller import LedController
from huxleyd.hardware.led_drivers import NullLedDriver
from huxleyd.hardware.led_patterns import LedState
from huxleyd.logs import JournalFieldsHandler
from huxleyd.turns.outputs import Activity, TurnOutputs
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnSource
from tests.fakes.turn_ports import RecordingAudio

WIRE_TEXT: dict[type[enum.StrEnum], list[str]] = {
    TurnSource: ["ptt", "text", "inject", "media", "wake"],
    Activity: ["idle", "listening", "thinking", "speaking", "media", "call", "offline", "muted"],
    LedState: [
        "booting",
        "idle",
        "listening",
        "thinking",
        "speaking",
        "media",
        "offline",
        "error",
        "muted",
    ],
    Earcon: [
        "listen_start",
        "listen_stop",
        "thinking",
        "error",
        "offline",
        "timer",
        "too_short",
        "key_refused",
        "degraded",
    ],
    PersonaString: ["too_short", "offline", "degraded"],
}
"""The text each name had when it was a plain string: journals, scripts and
persona files written before the enums must keep working."""


@pytest.mark.parametrize("names", list(WIRE_TEXT), ids=lambda e: e.__name__)
def test_every_name_keeps_its_text(names: type[enum.StrEnum]) -> None:
    assert [m.value for m in names] == WIRE_TEXT[names]
    for member in names:
        assert str(member) == f"{member}" == member.value
        assert names(member.value) is member


def test_every_activity_the_leds_show_is_a_led_state_of_the_same_name() -> None:
    assert {a.value for a in Activity} - {s.value for s in LedState} == {"call"}


class RecordingSender:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, message: str, **fields: Any) -> None:
        self.calls.append((message, fields))


@pytest.fixture
def journal() -> Iterator[RecordingSender]:
    sender = RecordingSender()
    handler = JournalFieldsHandler(sender)
    loggers = [logging.getLogger(n) for n in ("huxleyd.turns", "huxleyd.hardware")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    yield sender
    for lg, (level, propagate) in zip(loggers, saved, strict=True):
        lg.removeHandler(handler)
        lg.setLevel(level)
        lg.propagate = propagate


def test_the_turn_source_reaches_the_journal_as_its_text(journal: RecordingSender) -> None:
    outputs = TurnOutputs(RecordingAudio(), {})
    for source in TurnSource:
        turn = TurnRecord(source=source, outcome=TurnOutcome.ANSWERED)
        outputs.journal(turn)
        message, fields = journal.calls[-1]
        assert fields["HUXLEY_SOURCE"] == source.value, fields
        assert f"source={source.value} " in message, message


def test_the_led_state_reaches_the_journal_as_its_text(journal: RecordingSender) -> None:
    leds = LedController(NullLedDriver(), ManualClock(), initial=LedState.IDLE)
    leds.set_state(LedState.LISTENING)
    message, fields = journal.calls[-1]
    assert (fields["HUXLEY_STATE"], fields["HUXLEY_PREVIOUS"]) == ("listening", "idle")
    assert message == "led_state state=listening previous=idle"


def test_the_activity_crosses_the_control_socket_as_its_text() -> None:
    report = StatusReport(
        state=Activity.SPEAKING,
        provider_state="connected",
        media=None,
        volume=50,
        uptime_s=1.0,
        persona="default",
        provider_kind="sim",
        is_simulator=True,
    )
    line = ResultReply(7, report.to_dict()).encode()
    assert b'"state":"speaking"' in line.replace(b" ", b"")
    reply = parse_reply(line)
    assert isinstance(reply, ResultReply)
    back = StatusReport.from_dict(reply.result)
    assert back.state == "speaking" and Activity(back.state) is Activity.SPEAKING


def test_outputs_play_an_earcon_by_its_palette_name() -> None:
    palette = {"too_short": b"\1\0" * 10}
    audio = RecordingAudio(earcons=palette)
    outputs = TurnOutputs(audio, palette)
    outputs.earcon(Earcon.TOO_SHORT, before_speech=False)
    outputs.earcon(Earcon.ERROR, before_speech=False)  # no such sound: nothing plays
    assert audio.log == [("earcon", "too_short")]


def write_persona(tmp_path: Path, strings: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "P"\nlanguage = "es"\n[i18n.es.strings]\n{strings}\n')
    return path


def test_persona_strings_are_read_by_their_names(tmp_path: Path) -> None:
    persona = load_persona(write_persona(tmp_path, 'too_short = "Más largo"'))
    assert persona.string(PersonaString.TOO_SHORT, "default") == "Más largo"
    assert persona.string(PersonaString.OFFLINE, "default") == "default"
    assert list(persona.overrides.strings) == [PersonaString.TOO_SHORT]


def test_a_persona_string_that_names_nothing_is_refused_with_the_allowed_names(
    tmp_path: Path,
) -> None:
    path = write_persona(tmp_path, 'too_shrt = "Más largo"')
    with pytest.raises(ConfigError) as caught:
        load_persona(path)
    err = caught.value
    assert err.key == "i18n.es.strings.too_shrt"
    assert str(path) in str(err)
    assert "expected one of: too_short, offline" in str(err)
