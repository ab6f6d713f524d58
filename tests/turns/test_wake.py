"""The wake word in the turn layer: a detection starts a turn exactly as a
press does (source ``wake``), the end of speech commits it, the button wins,
a detection while the assistant talks barges in by the press's own path, and
nothing reaches the provider before a detection."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from huxleyd.handsfree.settings import WakeSettings
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnSource, TurnState
from huxleyd.turns.wake import WakeWord
from tests.fakes.clock import settle
from tests.fakes.turn_rig import FRAME, Rig, done, reply

SETTINGS = WakeSettings(model="okay_nabu", end_silence_ms=400, no_speech_s=2.0, max_turn_s=6.0)
VOICE = (np.sin(np.arange(480) * 2 * np.pi * 300 / 24_000) * 6000).astype("<i2").tobytes()
"""A 20 ms frame the end-of-speech detector calls speech (about -18 dBFS)."""


class RecordingWakePort:
    """The detector's place: records what it was fed and each reset."""

    def __init__(self) -> None:
        self.heard: list[tuple[bytes, float]] = []
        self.resets = 0

    def hear(self, pcm: bytes, captured_at: float, end_at: float) -> None:
        self.heard.append((pcm, end_at))

    def reset(self) -> None:
        self.resets += 1

    def deliver_to(self, on_wake: Callable[[float], None]) -> None:
        self.on_wake = on_wake


def wake_rig(
    *, playback_ok: bool = False, persona_allows: bool = True
) -> tuple[Rig, RecordingWakePort, WakeWord]:
    port = RecordingWakePort()
    wake = WakeWord(port, SETTINGS, playback_ok=playback_ok, persona_allows=persona_allows)
    return Rig(wake=wake), port, wake


def last_turn(rig: Rig) -> TurnRecord | None:
    return rig.coordinator.last_turn


def state_of(rig: Rig) -> TurnState:
    return rig.state()


async def test_idle_frames_go_to_the_detector_and_never_to_the_provider() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        assert rig.audio.capture_log[-1] == ("capture", True)  # armed: the mic is open here
        await rig.speak(50, VOICE)
        assert len(port.heard) == 50
        assert rig.provider.appended_bytes == 0
        assert "append_audio" not in rig.provider.names()


async def test_a_detection_starts_a_turn_as_a_press_does_and_the_end_of_speech_commits() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        await rig.speak(10, VOICE)  # "okay nabu"
        heard_at = port.heard[-4][1]  # detected in the 7th frame, reported 3 frames later
        rig.coordinator.wake(heard_at)
        assert rig.coordinator.turn is not None
        assert rig.coordinator.turn.source is TurnSource.WAKE
        assert rig.audio.earcon_names() == ["listen_start"]
        assert state_of(rig) is TurnState.LISTENING
        # the three frames after the detection point go out first, nothing before it
        assert rig.provider.appended_bytes == 3 * len(VOICE)
        await rig.speak(25, VOICE)  # the question
        assert state_of(rig) is TurnState.LISTENING
        await rig.speak(25, FRAME)  # quiet: 400 ms of it ends the turn
        assert state_of(rig) is TurnState.COMMITTING
        assert rig.provider.names()[-2:] == ["end_turn", "request_response"]
        rig.send(*reply("r1", "i1"), done("r1"))
        await settle()
        last = last_turn(rig)
        assert last is not None and last.source is TurnSource.WAKE
        assert last.outcome is TurnOutcome.ANSWERED


async def test_a_release_does_not_end_a_wake_turn() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        await rig.speak(3, VOICE)
        rig.coordinator.wake(port.heard[-1][1])
        rig.coordinator.release()  # a stray edge: nobody pressed
        assert state_of(rig) is TurnState.LISTENING


async def test_nothing_said_after_the_wake_word_drops_the_turn() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        await rig.speak(3, VOICE)
        rig.coordinator.wake(port.heard[-1][1])
        await rig.speak(110, FRAME)  # 2.2 s of quiet > no_speech_s
        last = last_turn(rig)
        assert last is not None and last.outcome is TurnOutcome.TOO_SHORT
        assert "end_turn" not in rig.provider.names()
        assert state_of(rig) is TurnState.IDLE


async def test_a_wake_turn_that_talks_on_is_committed_at_the_maximum() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        await rig.speak(3, VOICE)
        rig.coordinator.wake(port.heard[-1][1])
        await rig.speak(299, VOICE)
        assert state_of(rig) is TurnState.LISTENING
        await rig.speak(1, VOICE)  # 6 s: max_turn_s
        assert state_of(rig) is TurnState.COMMITTING


async def test_the_button_wins_over_the_wake_word() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        rig.coordinator.press()  # held
        await rig.speak(5, VOICE)
        assert port.heard == []  # listening: the detector hears nothing
        rig.coordinator.wake(rig.clock.monotonic())
        assert rig.coordinator.turn is not None
        assert rig.coordinator.turn.source is TurnSource.PTT
        await rig.speak(60, FRAME)  # quiet does not end a press
        assert state_of(rig) is TurnState.LISTENING
        rig.coordinator.release()
        assert state_of(rig) is TurnState.COMMITTING


async def test_a_press_during_a_wake_turn_takes_it_over() -> None:
    rig, port, _ = wake_rig()
    async with rig:
        await rig.speak(3, VOICE)
        rig.coordinator.wake(port.heard[-1][1])
        rig.coordinator.press()
        turn = rig.coordinator.turn
        assert turn is not None and turn.source is TurnSource.PTT
        await rig.speak(10, VOICE)
        await rig.speak(60, FRAME)  # quiet no longer ends it: the button does
        assert state_of(rig) is TurnState.LISTENING
        rig.coordinator.release()
        assert state_of(rig) is TurnState.COMMITTING
        assert rig.audio.earcon_names() == ["listen_start"]  # one turn, one cue


async def test_the_wake_word_barges_in_by_the_press_path() -> None:
    rig, port, _ = wake_rig(playback_ok=True)
    async with rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=5))
        await settle()
        rig.audio.played["i1"] = 1234
        await rig.speak(2, VOICE)  # the speaker talks: heard only because playback_ok
        assert len(port.heard) == 2
        rig.coordinator.wake(port.heard[-1][1])
        assert rig.audio.log[-2:] == [("flush", "speech"), ("earcon", "listen_start")]
        assert rig.provider.names()[-3:] == ["cancel_response", "truncate", "start_turn"]
        assert rig.provider.commands[-2] == ("truncate", ("i1", 1234))
        interrupted = last_turn(rig)
        assert interrupted is not None and interrupted.outcome is TurnOutcome.INTERRUPTED
        turn = rig.coordinator.turn
        assert turn is not None and turn.source is TurnSource.WAKE


async def test_without_playback_listening_the_speakers_voice_is_not_heard() -> None:
    rig, port, _ = wake_rig(playback_ok=False)
    async with rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=5))
        await settle()
        await rig.speak(5, VOICE)
        assert port.heard == []


async def test_a_persona_without_the_wake_word_and_a_mute_disarm_it() -> None:
    rig, port, _ = wake_rig(persona_allows=False)
    async with rig:
        assert rig.audio.capture_log == [("capture", False)]  # the mic stays closed
        await rig.speak(5, VOICE)
        rig.coordinator.wake(rig.clock.monotonic())
        assert port.heard == [] and rig.coordinator.turn is None
