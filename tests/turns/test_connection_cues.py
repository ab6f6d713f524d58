"""What the person at the device hears of the provider connection: one cue per
episode (offline, key refused), a press refused at once when nobody would
hear it, and the failure cue chosen by why the session ended."""

from __future__ import annotations

import pytest

from huxleyd.audio.types import Earcon
from huxleyd.providers.base import ConnectionState, EndReason
from huxleyd.turns.cues import failure_cue
from huxleyd.turns.link import Link
from huxleyd.turns.news import Activity
from huxleyd.turns.outputs import TurnOutputs
from tests.fakes.turn_ports import RecordingAudio

SHIPPED = {name: bytes([i + 1, 0]) * 8 for i, name in enumerate(("offline", "error"))}
WITH_KEY_CUE = {**SHIPPED, "key_refused": b"\7\0" * 8}


def link(palette: dict[str, bytes]) -> tuple[Link, RecordingAudio, TurnOutputs]:
    audio = RecordingAudio(earcons=palette)
    outputs = TurnOutputs(audio, palette)
    return Link(outputs, palette), audio, outputs


def run(
    link: Link, *states: ConnectionState, ended: EndReason | None = None, turn_lost: bool = False
) -> None:
    for attempt, state in enumerate(states, 1):
        link.track(state)
        link.announce(state, attempt, ended, turn_lost=turn_lost)


def test_offline_is_said_once_per_episode() -> None:
    lk, audio, _ = link(SHIPPED)
    run(lk, ConnectionState.OFFLINE, ConnectionState.RECONNECTING, ConnectionState.OFFLINE)
    assert audio.earcon_names() == ["offline"]
    run(lk, ConnectionState.CONNECTED, ConnectionState.OFFLINE)
    assert audio.earcon_names() == ["offline", "offline"]  # back online, then a new episode


@pytest.mark.parametrize(("palette", "cue"), [(WITH_KEY_CUE, "key_refused"), (SHIPPED, "offline")])
def test_a_refused_key_is_said_once_with_its_own_cue_if_the_persona_has_one(
    palette: dict[str, bytes], cue: str
) -> None:
    lk, audio, _ = link(palette)
    run(lk, *[ConnectionState.KEY_REFUSED] * 3)
    assert audio.earcon_names() == [cue]
    assert lk.key_refused
    run(lk, ConnectionState.CONNECTED)
    assert not lk.key_refused


def test_a_stall_is_cued_each_time() -> None:
    lk, audio, _ = link(SHIPPED)
    run(lk, ConnectionState.STALLED, ConnectionState.CONNECTED, ConnectionState.STALLED)
    assert audio.earcon_names() == ["offline", "offline"]


def test_a_stall_that_lost_a_turn_leaves_the_cue_to_that_turn() -> None:
    lk, audio, _ = link(SHIPPED)
    run(lk, ConnectionState.STALLED, turn_lost=True)
    assert audio.earcon_names() == []  # the lost turn plays its one cue, after its audio


@pytest.mark.parametrize(
    ("ended", "palette", "cue"),
    [
        (EndReason.KEY_REFUSED, WITH_KEY_CUE, Earcon.KEY_REFUSED),
        (EndReason.KEY_REFUSED, SHIPPED, Earcon.ERROR),
        (EndReason.MODEL_REFUSED, WITH_KEY_CUE, Earcon.ERROR),
        (None, WITH_KEY_CUE, Earcon.ERROR),
    ],
)
def test_a_failed_session_plays_the_cue_of_why_it_ended(
    ended: EndReason | None, palette: dict[str, bytes], cue: Earcon
) -> None:
    assert failure_cue(ended, palette) is cue
    lk, audio, _ = link(palette)
    run(lk, ConnectionState.FAILED, ended=ended)
    assert audio.earcon_names() == [str(cue)]


@pytest.mark.parametrize(
    "state", [ConnectionState.RECONNECTING, ConnectionState.STALLED, ConnectionState.OFFLINE]
)
def test_a_press_while_the_link_is_down_is_refused_at_once(state: ConnectionState) -> None:
    lk, audio, outputs = link(SHIPPED)
    lk.track(state)
    assert lk.refuse_turn()
    assert audio.earcon_names() == ["offline"]
    assert outputs.activity is Activity.OFFLINE


def test_a_press_while_setup_failed_plays_the_error() -> None:
    lk, audio, outputs = link(SHIPPED)
    lk.track(ConnectionState.SETUP_FAILED)
    assert lk.refuse_turn()
    assert audio.earcon_names() == ["error"] and outputs.activity is Activity.OFFLINE


@pytest.mark.parametrize("state", [ConnectionState.CONNECTED, ConnectionState.CONNECTING])
def test_a_press_while_connected_or_renewing_is_heard(state: ConnectionState) -> None:
    lk, audio, outputs = link(SHIPPED)
    lk.track(state)
    assert not lk.refuse_turn()
    assert audio.earcon_names() == [] and outputs.activity is Activity.IDLE
