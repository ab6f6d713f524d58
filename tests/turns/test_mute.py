"""The microphone mute in the turn layer: closed at the source, its own
activity (the LEDs' ``muted``), a press starts no turn, a long silent hold
mutes and a long hold unmutes, and the wake word hears nothing meanwhile."""

from __future__ import annotations

from huxleyd.handsfree.settings import WakeSettings
from huxleyd.providers.base import ConnectionState
from huxleyd.turns.mute import MUTE_HOLD_S
from huxleyd.turns.news import MuteChanged
from huxleyd.turns.outputs import Activity
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnState
from huxleyd.turns.wake import WakeWord
from tests.fakes.turn_rig import FRAME, Rig
from tests.turns.test_wake import VOICE, RecordingWakePort

HOLD_FRAMES = int(MUTE_HOLD_S * 50) + 5


def muted_rig() -> tuple[Rig, RecordingWakePort, list[bool]]:
    port = RecordingWakePort()
    told: list[bool] = []
    rig = Rig(wake=WakeWord(port, WakeSettings(model="okay_nabu"), playback_ok=False))
    # what the runtime persists: the coordinator's MuteChanged events
    rig.coordinator.subscribe(
        lambda news: told.append(news.muted) if isinstance(news, MuteChanged) else None
    )
    return rig, port, told


def mic_open(rig: Rig) -> bool:
    """Read through a call, so mypy does not keep an earlier narrowing."""
    return rig.audio.capture_active


def activity(rig: Rig) -> Activity:
    return rig.coordinator.activity


def muted(rig: Rig) -> bool:
    return rig.coordinator.muted


def last_turn(rig: Rig) -> TurnRecord | None:
    return rig.coordinator.last_turn


async def test_mute_closes_the_mic_at_the_source_and_shows_it() -> None:
    rig, port, told = muted_rig()
    async with rig:
        assert mic_open(rig)  # armed: the wake word listens on the device
        rig.coordinator.set_muted(True)
        assert not mic_open(rig)
        assert activity(rig) is Activity.MUTED
        assert rig.audio.earcon_names() == ["listen_stop"]
        assert told == [True]
        await rig.speak(5, VOICE)
        assert port.heard == []  # nothing reaches the detector
        rig.coordinator.wake(rig.clock.monotonic())
        assert rig.coordinator.turn is None
        rig.coordinator.set_muted(False)
        assert mic_open(rig) and activity(rig) is Activity.IDLE
        assert told == [True, False]


async def test_a_press_while_muted_starts_no_turn_and_a_long_hold_unmutes() -> None:
    rig, _, told = muted_rig()
    async with rig:
        rig.coordinator.set_muted(True)
        rig.coordinator.press()
        assert rig.coordinator.turn is None and activity(rig) is Activity.MUTED
        rig.clock.advance(0.5)
        rig.coordinator.release()
        assert rig.audio.earcon_names()[-1] == "error"  # a reminder, still muted
        assert muted(rig)
        rig.coordinator.press()
        rig.clock.advance(MUTE_HOLD_S)
        rig.coordinator.release()
        assert not muted(rig) and told == [True, False]
        assert rig.provider.names() == []  # nothing was ever sent


async def test_a_long_silent_hold_mutes_and_commits_nothing() -> None:
    rig, _, told = muted_rig()
    async with rig:
        rig.coordinator.press()
        await rig.speak(HOLD_FRAMES, FRAME)  # held, nothing said
        rig.coordinator.release()
        assert muted(rig) and told == [True]
        last = last_turn(rig)
        assert last is not None and last.outcome is TurnOutcome.MUTED
        assert "end_turn" not in rig.provider.names()
        assert rig.state() is TurnState.IDLE


async def test_a_long_hold_with_speech_is_a_turn() -> None:
    rig, _, told = muted_rig()
    async with rig:
        rig.coordinator.press()
        await rig.speak(HOLD_FRAMES, VOICE)
        rig.coordinator.release()
        assert not muted(rig) and told == []
        assert rig.state() is TurnState.COMMITTING


async def test_muting_while_listening_drops_the_turn() -> None:
    rig, _, _ = muted_rig()
    async with rig:
        rig.coordinator.press()
        await rig.speak(20, VOICE)
        rig.coordinator.set_muted(True)
        last = last_turn(rig)
        assert last is not None and last.outcome is TurnOutcome.MUTED
        assert rig.provider.names()[-1] == "start_turn"  # cleared, never committed
        assert activity(rig) is Activity.MUTED


async def test_a_start_muted_shows_it_and_keeps_the_mic_closed() -> None:
    port = RecordingWakePort()
    wake = WakeWord(port, WakeSettings(model="okay_nabu"), playback_ok=False)
    rig = Rig(wake=wake, muted=True)
    async with rig:
        assert rig.audio.capture_log == [("capture", False)]
        assert activity(rig) is Activity.MUTED


async def test_a_long_press_that_was_refused_is_not_a_mute() -> None:
    rig, _, told = muted_rig()
    async with rig:
        rig.coordinator.on_connection(ConnectionState.OFFLINE)
        rig.coordinator.press()  # the offline cue, no turn
        rig.clock.advance(MUTE_HOLD_S + 1)
        rig.coordinator.release()
        assert not muted(rig) and told == []
