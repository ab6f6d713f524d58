"""The wake word end to end: the real daemon on the WAV card and the simulator.

The mic hears espeak-ng chatter (nothing may leave the device), then "okay
nabu" and a question (a steady tone, easy to tell apart from speech), then
quiet: one turn starts, with source ``wake``, the end-of-speech detector
commits it, and everything the provider received came after the wake word.
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.audio import echo
from huxleyd.hardware.led_patterns import LedState
from huxleyd.sim.scenario import Scenario
from huxleyd.turns.state import TurnSource
from tests.e2e.harness import RATE, Rig, speech, turn, until
from tests.fakes.wake_audio import CHATTER, espeak, silence

pytest.importorskip("pymicro_wakeword")

WAKE = '[wake]\nmodel = "okay_nabu"\nend_silence_ms = 500\n'
QUESTION_S = 1.5


def mic_open(rig: Rig) -> bool:
    """Whether the engine queues mic frames (what the turn layer last asked of it)."""
    return bool(rig.rt.parts.engine._audio_thread.mic.req_capture_active)


def tone(seconds: float) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (np.sin(2 * np.pi * 300 * t) * 6000).astype(np.int16)


async def test_a_wake_phrase_in_the_mic_starts_a_turn_with_source_wake(tmp_path: Path) -> None:
    async with Rig(tmp_path, Scenario(turns=(turn(speech(200)),)), extra_tables=WAKE) as rig:
        chatter = np.concatenate([espeak(text) for text in CHATTER[:3]])
        mic = np.concatenate(
            [
                chatter,
                silence(0.5),
                espeak("okay nabu"),
                silence(0.3),
                tone(QUESTION_S),
                silence(2.0),
            ]
        )
        rig.backend.feed_mic(mic.astype("<i2").tobytes())
        await until(lambda: rig.coordinator.last_turn is not None, "a turn ended")
        last = rig.coordinator.last_turn
        assert last is not None and last.source is TurnSource.WAKE
        assert last.outcome is not None and last.outcome.value == "answered"
        types = rig.sent_types()
        assert types.count("input_audio_buffer.commit") == 1
        sent = b"".join(
            base64.b64decode(e.audio)
            for e in rig.sim.received
            if e.type == "input_audio_buffer.append"
        )
        sent_s = len(sent) / 2 / RATE
        # what went out: at most the tail of the wake phrase, the gap, the question
        # and the quiet that ended it; none of the chatter before it
        assert QUESTION_S <= sent_s <= 0.3 + QUESTION_S + 0.5 + 0.5, sent_s
        assert len(chatter) / RATE > 4.0  # a leak of it could not hide in the slack


async def test_the_mute_survives_a_restart_with_its_leds(tmp_path: Path) -> None:
    scenario = Scenario(turns=())
    async with Rig(tmp_path, scenario, extra_tables=WAKE) as rig:
        assert mic_open(rig)  # armed: listening on the device
        assert await RuntimeControl(rig.rt).set_muted(True) is True
        assert not mic_open(rig)
        await until(lambda: (tmp_path / "state" / "muted").exists(), "the mute saved")
        assert rig.rt.parts.leds.state is LedState.MUTED
    async with Rig(tmp_path, scenario, extra_tables=WAKE) as again:
        assert await RuntimeControl(again.rt).get_muted() is True
        assert again.rt.parts.leds.state is LedState.MUTED
        assert not mic_open(again)
        again.backend.feed_mic(np.concatenate([espeak("okay nabu"), silence(2.0)]).tobytes())
        await until(lambda: again.backend.mic_queued_frames() == 0, "mic consumed")
        assert again.coordinator.last_turn is None and again.coordinator.turn is None


async def test_doctor_says_the_wake_word_listens_and_when_it_is_muted(tmp_path: Path) -> None:
    async with Rig(tmp_path, Scenario(turns=()), extra_tables=WAKE) as rig:
        control = RuntimeControl(rig.rt)
        check = {c.name: c for c in await control.doctor()}["wake word"]
        assert check.status == "ok" and "'okay_nabu' listens on the device" in check.detail
        playback = "also while the speaker plays" if echo.AVAILABLE else "not while the speaker"
        assert playback in check.detail
        await control.set_muted(True)
        check = {c.name: c for c in await control.doctor()}["wake word"]
        assert (check.status, check.fix) == ("warn", "huxleyctl mute off")
