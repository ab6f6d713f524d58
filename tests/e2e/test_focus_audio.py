"""End to end: focus on the speaker, measured on the samples that reach it.

A MIXABLE stream (a constant level) ducks by the configured depth within the
attack time while the user holds the button, stays ducked under the answer,
and comes back once the answer is over. Every position is a played one: the
speaker sample at which the focus manager ducked and unducked (read from
its ``focus_changed`` events, which the duck and unduck precede in the same
call) and the onset found in the samples, never a wall-clock wait. A NONMIXABLE stream whose samples
count up pauses and resumes at the very next sample (only the 5 ms fades
differ from the stream). A preempted stream whose patience runs out hears
``on_patience_expired`` before its iterator is closed, and never comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from huxleyd.audio.settings import AudioSettings
from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from tests.e2e.harness import (
    COUNTER_BASE,
    COUNTER_PERIOD,
    RADIO_LEVEL,
    RATE,
    Rig,
    counter_runs,
    scenario_skill_installed,
    tone_windows,
    until,
)

PERIOD = RATE // 50
SPEECH_HZ = 330.0
SETTINGS = AudioSettings()
RAMP = round(SETTINGS.ramp_ms * RATE / 1000)
"""Samples of the pause/resume fades (5 ms)."""
ATTACK = round(SETTINGS.duck_attack_ms * RATE / 1000)
RELEASE = round(SETTINGS.duck_release_ms * RATE / 1000)
DUCKED = RADIO_LEVEL * 10 ** (SETTINGS.duck_depth_db / 20)


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


def play(tool: str) -> Scenario:
    """Turn 1 starts ``tool``'s stream after a short reply; turn 2 answers the user."""
    speech = ResponseSpec(say="ok", tone_hz=SPEECH_HZ, duration_ms=200)
    answer = ResponseSpec(say="answer", tone_hz=SPEECH_HZ, duration_ms=400)
    return Scenario(
        turns=(
            TurnSpec(responses=(ResponseSpec(tool_calls=(ToolCallSpec(name=tool),)), speech)),
            TurnSpec(responses=(answer,)),
        )
    )


class FocusPositions(logging.Handler):
    """The speaker position at each ``focus_changed`` of one activity.

    The focus manager moves the mixer and then logs the change, in the same
    call on the loop; the audio thread waits for the loop after every period
    (lockstep), so the samples written by then are where the change took
    effect, to within the period being mixed."""

    def __init__(self, rig: Rig, activity: str) -> None:
        super().__init__()
        self.rig = rig
        self.activity = activity
        self.seen: list[tuple[str, int]] = []
        self.logger = logging.getLogger("huxleyd.turns")

    def emit(self, record: logging.LogRecord) -> None:
        words = record.getMessage().split()
        fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if words and words[0] == "focus_changed" and fields.get("activity") == self.activity:
            self.seen.append((fields["behavior"], len(self.rig.backend.speaker_samples())))

    def last(self) -> str | None:
        return self.seen[-1][0] if self.seen else None

    def at(self, behavior: str) -> int:
        """Where ``behavior`` last began (AssertionError if it never did)."""
        found = [pos for b, pos in self.seen if b == behavior]
        assert found, (behavior, self.seen)
        return found[-1]

    def __enter__(self) -> FocusPositions:
        self.logger.addHandler(self)
        self._level = self.logger.level
        self.logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self._level)


def media_playing(rig: Rig) -> bool:
    coordinator = rig.rt.parts.coordinator
    return coordinator is not None and coordinator.media.playing


async def start_stream(rig: Rig, heard: str) -> None:
    coordinator = rig.rt.parts.coordinator
    coordinator.say("play it")
    if heard == "radio":
        await until(lambda: np.any(rig.speaker() == RADIO_LEVEL), "the radio is heard")
    else:
        await until(lambda: counter_runs(rig.speaker()) != [], "the stream is heard")
    await until(rig.idle, "the first turn is over")


async def ask(
    rig: Rig, *, hold_until: str | None = None, held_from: FocusPositions | None = None
) -> int:
    """Press, talk, (wait until ``hold_until`` is in the skill's events), release.

    With ``held_from``: hold until the speaker has played two attack times
    past the duck (a played position, not a time). Returns the speaker
    position at the press."""
    button = rig.rt.parts.button
    pressed_at = len(rig.speaker())
    button.press()
    rig.backend.feed_mic(bytes(int(0.4 * RATE) * 2))
    await until(lambda: rig.backend.mic_queued_frames() == 0, "mic consumed")
    if hold_until is not None:
        events = rig.skill("scenario").events
        await until(lambda: hold_until in events, hold_until)
    held_since = pressed_at
    if held_from is not None:
        await until(lambda: held_from.last() is not None, "the duck")
        held_since = held_from.at("may_duck")
    await until(lambda: len(rig.speaker()) > held_since + 2 * ATTACK, "held past the attack")
    button.release()
    await until(lambda: rig.sim.record.responses_done >= 3, "the answer")
    await until(rig.idle, "the answer is over")
    return pressed_at


async def test_mixable_stream_ducks_under_the_button_and_the_answer_then_comes_back(
    tmp_path: Path,
) -> None:
    async with Rig(tmp_path, play("radio"), earcons=False) as rig:
        await start_stream(rig, "radio")
        with FocusPositions(rig, "radio") as radio:
            pressed_at = await ask(rig, held_from=radio)
            await until(lambda: radio.last() == "primary", "the unduck")
            ducked_at, unducked_at = radio.at("may_duck"), radio.at("primary")
        await until(
            lambda: len(rig.speaker()) > unducked_at + RELEASE + 4 * PERIOD,
            "the release ramp is over",
        )
        out = rig.speaker()
        assert np.all(out[pressed_at - PERIOD : pressed_at] == RADIO_LEVEL), "full level before"
        assert pressed_at <= ducked_at
        onset = ducked_at + int(np.flatnonzero(out[ducked_at:] != RADIO_LEVEL)[0])
        assert onset - ducked_at <= 2 * PERIOD, "the gain moves within a period of the duck"
        # Down by the configured depth within the attack time (+1 period of
        # granularity: the gain moves once per period), and held there while
        # the button is down (nothing else plays).
        settled = out[onset + ATTACK + PERIOD : onset + 2 * ATTACK]
        assert len(settled) > 0 and np.all(np.abs(settled - DUCKED) <= 2), (
            settled.min(),
            settled.max(),
            DUCKED,
        )
        answer = tone_windows(out, SPEECH_HZ)
        answer = answer[answer > onset]
        assert len(answer) >= 10, "the answer was heard"
        under = np.concatenate([out[w : w + PERIOD] for w in answer])
        assert abs(float(np.mean(under)) - DUCKED) < 150, "still ducked under the answer"
        end_of_answer = int(answer[-1]) + PERIOD
        assert unducked_at >= end_of_answer - PERIOD, "not unducked before the answer ended"
        back = out[unducked_at + RELEASE + 2 * PERIOD : unducked_at + RELEASE + 4 * PERIOD]
        assert len(back) > 0 and np.all(back == RADIO_LEVEL), "back to full level after"
        assert media_playing(rig), "the radio plays on"


async def test_nonmixable_stream_pauses_and_resumes_at_the_same_sample(tmp_path: Path) -> None:
    async with Rig(tmp_path, play("counter"), earcons=False) as rig:
        rig.skill("scenario").counter_s = 2.0
        await start_stream(rig, "counter")
        pressed_at = await ask(rig)
        await until(lambda: not media_playing(rig), "the stream plays to its end")
        out = rig.speaker()
        runs = counter_runs(out)
        assert len(runs) == 2, runs  # one run before the pause, one after: no other break
        (a_at, a_first, a_len), (b_at, b_first, b_len) = runs
        assert a_first == COUNTER_BASE, "the stream started at its first sample"
        assert a_at + a_len <= pressed_at + 3 * PERIOD, "it paused at the press"
        answer = tone_windows(out, SPEECH_HZ)
        assert b_at > int(answer[-1]), "and resumed after the answer"
        a_last = a_first + a_len - 1
        # Between the last exact sample before the pause and the first exact
        # one after it lie only the fade-out and the fade-in (5 ms each, the
        # last fade-in sample at full gain): nothing skipped, nothing repeated.
        consumed = (b_first - a_last) % COUNTER_PERIOD
        assert consumed == 2 * RAMP, (consumed, 2 * RAMP)
        total = a_len + b_len + 2 * RAMP - 1
        assert total == int(2.0 * RATE), "every sample of the stream was played once"
        assert rig.skill("scenario").events[-2:] == ["counter:end", "counter:finally"]


async def test_patience_expiry_calls_back_before_eviction_and_the_stream_is_gone(
    tmp_path: Path,
) -> None:
    async with Rig(tmp_path, play("impatient"), earcons=False) as rig:
        skill = rig.skill("scenario")
        await start_stream(rig, "impatient")
        pressed_at = await ask(rig, hold_until="impatient:finally")
        assert skill.events == ["impatient:start", "impatient:expired", "impatient:finally"]
        assert not media_playing(rig)
        out = rig.speaker()
        runs = counter_runs(out)
        assert runs and all(at < pressed_at + 3 * PERIOD for at, _, _ in runs), (
            "the stream stopped at the press and never came back"
        )
        answer = tone_windows(out, SPEECH_HZ)
        assert np.all(out[int(answer[-1]) + PERIOD :] == 0), "silence after the answer"
