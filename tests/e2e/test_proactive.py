"""End to end: proactive turns (``ctx.inject_turn``) through the real runtime.

Every case runs the daemon's Runtime (WAV sound card at 4x, mock button,
simulator on loopback) and the ``scenario`` test skill, whose ``ctx`` the
test uses as a skill would. What is asserted is what a person notices: the
announcement (the simulator's default reply, "ding ding", a 550 Hz tone in
its tone speech) on the speaker, before or after what was in its way, and
the ``response.create`` that asked for it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxley_sdk import ClaimEndReason, InjectPriority
from huxley_sdk.audio import read_wav_pcm16_24k_mono
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import (
    ANNOUNCE,
    ANNOUNCE_HZ,
    RATE,
    SPEECH_HZ,
    Rig,
    call,
    counter_runs,
    scenario_skill_installed,
    speech,
    tone_windows,
    turn,
    until,
)

PROMPT = "Tell the user the pasta is ready."
WINDOW = RATE // 50

P = InjectPriority
PRIORITIES = (P.NORMAL, P.BLOCK_BEHIND_COMMS, P.PREEMPT)
EXPECTED = {
    # state: what each of NORMAL, BLOCK_BEHIND_COMMS, PREEMPT does there
    "idle": ("now", "now", "now"),
    "mid_turn": ("after", "after", "after"),
    "content": ("after", "now", "now"),
    "claim": ("after", "after", "now"),
    "holding": ("after", "after", "after"),
}
CASES = [
    pytest.param(state, priority, EXPECTED[state][i], id=f"{state}-{priority.value}")
    for state in EXPECTED
    for i, priority in enumerate(PRIORITIES)
]


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


SCENARIOS = {
    "idle": (),
    "mid_turn": (turn(speech(1500)),),
    "content": (turn(call("counter"), speech(300)),),
    "claim": (),
    "holding": (turn(speech(400)),),
}


def announcement_windows(rig: Rig) -> np.ndarray:
    return tone_windows(rig.speaker(), ANNOUNCE_HZ)


def heard(rig: Rig) -> bool:
    return len(announcement_windows(rig)) >= 3


async def audio_passes(rig: Rig, seconds: float) -> None:
    """Let ``seconds`` of speaker audio go by (the engine's clock, not the test's)."""
    mark = len(rig.speaker())
    await until(lambda: len(rig.speaker()) >= mark + int(seconds * RATE), f"{seconds} s of audio")


async def enter(rig: Rig, state: str) -> None:
    """Put the device in ``state``."""
    coordinator = rig.rt.parts.coordinator
    skill = rig.skill("scenario")
    if state == "mid_turn":
        coordinator.say("tell me a story")
        await until(lambda: len(tone_windows(rig.speaker(), SPEECH_HZ)) > 0, "the reply is heard")
    elif state == "content":
        coordinator.say("play the counter")
        await until(lambda: counter_runs(rig.speaker()) != [], "the stream is heard")
        assert rig.idle()
    elif state == "claim":
        await skill.start_claim()
    elif state == "holding":
        button = rig.rt.parts.button
        button.press()
        rig.backend.feed_mic(bytes(RATE))  # 0.5 s of the user talking (silence will do)
        await until(lambda: rig.appends() > 0, "the mic reaches the provider")


async def leave(rig: Rig, state: str) -> int:
    """End what ``state`` put in the way; returns the speaker position just before."""
    skill = rig.skill("scenario")
    mark = len(rig.speaker())
    if state == "content":
        await until(lambda: not rig.media_playing(), "the stream plays out")
    elif state == "claim":
        skill.claim_handle.cancel()
        await until(lambda: "claim:natural" in skill.events, "the claim ends")
    elif state == "holding":
        button = rig.rt.parts.button
        await until(lambda: rig.backend.mic_queued_frames() == 0, "mic consumed")
        mark = len(rig.speaker())
        button.release()
        await until(lambda: rig.sim.record.responses_done >= 1, "the user's turn is answered")
    return mark


def assert_after(rig: Rig, state: str, ended_at: int) -> None:
    """The announcement's first sound comes after what was in its way."""
    out = rig.speaker()
    first = int(announcement_windows(rig)[0])
    assert first >= ended_at, (first, ended_at)
    if state in ("mid_turn", "holding"):
        replies = tone_windows(out, SPEECH_HZ)
        assert first > replies[-1], "the announcement waits until the reply has been heard"
    if state == "content":
        runs = counter_runs(out)
        last = runs[-1][0] + runs[-1][2]
        assert first >= last, "the announcement waits until the stream has ended"


async def assert_now(rig: Rig, state: str) -> None:
    """It spoke over what was there: a stream paused and came back; a claim ended."""
    skill = rig.skill("scenario")
    if state == "content":
        await until(lambda: not rig.media_playing(), "the stream resumes and plays out")
        await until(rig.idle, "idle")
        out = rig.speaker()
        first = int(announcement_windows(rig)[0])
        runs = counter_runs(out)
        assert any(start < first for start, _, _ in runs), "the stream played before"
        assert any(start > first for start, _, _ in runs), "and resumed after the announcement"
    if state == "claim":
        assert skill.events == ["claim:preempted"]


@pytest.mark.parametrize(("state", "priority", "expected"), CASES)
async def test_inject_priority_against_state(
    tmp_path: Path, state: str, priority: InjectPriority, expected: str
) -> None:
    scenario = Scenario(default_reply=ANNOUNCE, turns=SCENARIOS[state])
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        skill = rig.skill("scenario")
        await enter(rig, state)
        await skill.ctx.inject_turn(PROMPT, priority=priority)
        if expected == "now":
            await until(lambda: rig.announced(PROMPT) == 1, "the announcement is asked for")
            await until(lambda: heard(rig), "the announcement is heard")
            await assert_now(rig, state)
        else:
            await audio_passes(rig, 0.3)
            assert rig.announced(PROMPT) == 0, "it waits"
            assert not heard(rig)
            ended_at = await leave(rig, state)
            await until(lambda: rig.announced(PROMPT) == 1, "the announcement is asked for")
            await until(lambda: heard(rig), "the announcement is heard")
            await until(rig.idle, "idle")
            assert_after(rig, state, ended_at)
        await audio_passes(rig, 0.3)
        assert rig.announced(PROMPT) == 1, "exactly once"
        assert rig.sim.violations == []


async def started_claim(rig: Rig) -> Any:
    skill = rig.skill("scenario")
    await skill.start_claim()
    return skill


async def test_dedup_replaces_a_queued_inject_and_its_waiter_hears_the_new_one(
    tmp_path: Path,
) -> None:
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        skill = await started_claim(rig)
        first = asyncio.create_task(
            skill.ctx.inject_turn_and_wait("Say the pasta is at 5 minutes.", dedup_key="pasta")
        )
        await asyncio.sleep(0)  # the first is queued before the second
        await skill.ctx.inject_turn(
            PROMPT, dedup_key="pasta", priority=InjectPriority.BLOCK_BEHIND_COMMS
        )
        await audio_passes(rig, 0.2)
        assert not first.done(), "queued behind the claim"
        skill.claim_handle.cancel()
        await asyncio.wait_for(first, 15)
        # The first caller's wait ended when the replacement had been heard.
        assert heard(rig)
        await until(rig.idle, "idle")
        assert rig.announced(PROMPT) == 1
        assert rig.announced("Say the pasta is at 5 minutes.") == 0


async def test_dedup_drops_a_new_inject_while_the_same_key_is_in_flight(tmp_path: Path) -> None:
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        skill = rig.skill("scenario")
        await skill.ctx.inject_turn(PROMPT, dedup_key="pasta")
        assert rig.rt.parts.coordinator.proactive.queue.in_flight is not None
        late = asyncio.create_task(
            skill.ctx.inject_turn_and_wait("Say the pasta again.", dedup_key="pasta")
        )
        await asyncio.wait_for(late, 15)  # follows the one in flight
        assert heard(rig), "it returned once the first announcement had been heard"
        await until(rig.idle, "idle")
        await audio_passes(rig, 0.5)
        assert rig.announced(PROMPT) == 1
        assert rig.announced("Say the pasta again.") == 0


async def test_an_expired_inject_is_dropped_and_logged_not_spoken_late(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stale = "Say the tea is ready."
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        skill = await started_claim(rig)
        waiting = asyncio.create_task(
            skill.ctx.inject_turn_and_wait(stale, dedup_key="tea", ttl_s=0.5)
        )
        await asyncio.wait_for(waiting, 15)  # returns when it expires
        assert skill.events == [], "the claim is still live: the inject expired behind it"
        assert any("inject_expired" in r.getMessage() for r in caplog.records)
        skill.claim_handle.cancel()
        await skill.ctx.inject_turn_and_wait(PROMPT)  # something later is still spoken
        assert heard(rig)
        assert rig.announced(PROMPT) == 1
        assert rig.announced(stale) == 0, "never spoken late"


async def test_a_queued_inject_survives_a_reconnect(tmp_path: Path) -> None:
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        skill = await started_claim(rig)
        await skill.ctx.inject_turn(PROMPT, priority=InjectPriority.BLOCK_BEHIND_COMMS)
        await rig.sim.drop_connections()
        await until(lambda: rig.sim.connection_count >= 2, "reconnected")
        await until(lambda: rig.rt.connection_state == "connected", "connected again")
        # The old socket is gone (drop_connections waits for it): whatever is
        # received from here on came over the new connection.
        on_the_new_connection = len(rig.sim.received)
        skill.claim_handle.cancel()
        await until(lambda: heard(rig), "the announcement is heard")
        asked = [
            i
            for i, e in enumerate(rig.sim.received)
            if e.type == "response.create"
            and e.response is not None
            and (e.response.instructions or "").endswith(PROMPT)
        ]
        assert len(asked) == 1 and asked[0] >= on_the_new_connection, "spoken on the new connection"
        assert rig.sim.violations == []


async def test_an_inject_that_comes_due_while_offline_waits_for_the_connection(
    tmp_path: Path,
) -> None:
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        skill = await started_claim(rig)
        await skill.ctx.inject_turn(PROMPT, priority=InjectPriority.BLOCK_BEHIND_COMMS)
        await rig.sim.drop_connections()
        await until(lambda: rig.rt.connection_state != "connected", "disconnected")
        skill.claim_handle.cancel()  # free to speak, but nobody to ask
        await until(lambda: "claim:natural" in skill.events, "the claim ends")
        # Not asked into the void (the device would sit "thinking" until the
        # silent-response watchdog, and give up on it after two retries).
        assert rig.idle() and rig.rt.parts.coordinator.activity == "idle"
        await until(lambda: rig.sim.connection_count >= 2, "reconnected")
        await until(lambda: heard(rig), "the announcement is heard")
        await until(rig.idle, "idle")
        assert rig.announced(PROMPT) == 1
        last = rig.rt.parts.coordinator.last_turn
        assert last is not None and last.source == "inject" and last.retries == 0


async def test_inject_turn_and_wait_returns_after_the_announcement_was_heard(
    tmp_path: Path,
) -> None:
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        skill = rig.skill("scenario")
        await skill.ctx.inject_turn_and_wait(PROMPT)
        at_return = len(announcement_windows(rig))
        assert at_return >= 3, "the announcement was on the speaker before the call returned"
        await audio_passes(rig, 0.5)
        assert len(announcement_windows(rig)) == at_return, "all of it, not just its start"


async def test_shutting_down_during_an_announcement_is_clean(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scenario = Scenario(turns=(), default_reply=" ".join(["ding"] * 20))
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        skill = rig.skill("scenario")
        waiting = asyncio.create_task(skill.ctx.inject_turn_and_wait(PROMPT))
        await until(lambda: len(announcement_windows(rig)) > 0, "the announcement starts")
    await asyncio.wait_for(waiting, 5)  # released by the shutdown, not left hanging
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    # earcons=False is a sounds folder without earcons: that part is degraded, said once.
    assert [e for e in errors if not e.startswith("part_degraded part=earcons")] == []


# ---------------------------------------------------------------- input claims


def mic_tone(seconds: float, hz: float = 300.0) -> bytes:
    t = np.arange(int(RATE * seconds)) / RATE
    return (np.sin(2 * np.pi * hz * t) * 8000).astype("<i2").tobytes()


def claim_window(rig: Rig, after_prompt: str) -> list[str]:
    """Client events from the claim's input_audio_buffer.clear to the request after it."""
    types = rig.sim.record.types_received()
    start = len(types) - 1 - types[::-1].index("input_audio_buffer.clear")
    end = next(
        i
        for i, e in enumerate(rig.sim.received)
        if i > start
        and e.type == "response.create"
        and e.response is not None
        and after_prompt in (e.response.instructions or "")
    )
    return types[start:end]


async def test_a_memo_takes_the_mic_from_the_provider_and_the_button_hangs_up(
    tmp_path: Path,
) -> None:
    scenario = Scenario(default_reply=ANNOUNCE, turns=(turn(call("record_memo"), speech(200)),))
    async with Rig(
        tmp_path,
        scenario,
        skills=("system", "scenario", "memos"),
        skill_config={"memos": "max_seconds = 30"},
        earcons=False,
    ) as rig:
        coordinator = rig.rt.parts.coordinator
        coordinator.say("record a note")
        await until(lambda: coordinator.proactive.claims.active is not None, "the claim starts")
        claimed_at = rig.clock.monotonic()
        appends_before = rig.appends()
        spoken = mic_tone(1.0)
        rig.backend.feed_mic(spoken)
        await until(lambda: rig.backend.mic_queued_frames() == 0, "the note is spoken")
        await until(lambda: rig.clock.monotonic() > claimed_at + 0.35, "past the 300 ms grace")
        button = rig.rt.parts.button
        button.press()
        button.release()
        await until(lambda: rig.announced("was saved.") == 1, "the note is confirmed")
        await until(lambda: heard(rig), "the confirmation is heard")
        # The provider heard nothing while the skill held the microphone.
        window = claim_window(rig, "was saved.")
        assert "input_audio_buffer.append" not in window, window
        assert rig.appends() == appends_before
        assert rig.sim.record.committed_audio == []
        (wav,) = await asyncio.to_thread(lambda: list(tmp_path.rglob("memos/*.wav")))
        recorded = read_wav_pcm16_24k_mono(wav)
        assert spoken in recorded, "the skill got the mic frames, unchanged"
        db = rig.rt.parts.db
        stored = await db.skill_storage("memos").get_setting("memo:" + wav.stem)
        assert stored is not None and json.loads(stored)["ended_by"] == "user_ptt"
        assert rig.sim.violations == []


async def test_a_press_in_the_first_300_ms_of_a_claim_does_not_hang_up(tmp_path: Path) -> None:
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        coordinator = rig.rt.parts.coordinator
        skill = await started_claim(rig)
        started = rig.clock.monotonic()
        coordinator.press()  # the tail of the press that started it, or a bounce
        await audio_passes(rig, 0.1)
        assert skill.events == [] and coordinator.proactive.claims.active is not None
        await until(lambda: rig.clock.monotonic() > started + 0.35, "past the grace")
        coordinator.press()
        await until(lambda: skill.events == ["claim:user_ptt"], "hung up")
        assert await skill.claim_handle.wait_end() is ClaimEndReason.USER_PTT
        assert coordinator.state.value == "idle", "the press only hung up; nobody listens"


async def test_a_raising_claim_callback_ends_with_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    scenario = Scenario(
        turns=(turn(call("bad_claim"), speech(200)), turn(speech(400, hz=ANNOUNCE_HZ)))
    )
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        skill = rig.skill("scenario")
        coordinator = rig.rt.parts.coordinator
        coordinator.say("start the broken claim")
        # The first mic frame it gets (silence will do) makes it raise.
        await until(lambda: skill.events == ["claim:error"], "the claim ends with ERROR")
        await until(rig.idle, "idle")
        assert coordinator.activity == "idle"
        await rig.say_into_mic()
        await until(lambda: rig.sim.record.responses_done >= 3, "the next turn is answered")
        await until(lambda: heard(rig), "and heard")
        assert len(rig.sim.record.committed_audio) == 1, "the mic went to the provider again"
        assert rig.sim.violations == []


async def test_a_timer_due_during_a_claim_waits_for_the_claim_to_end(tmp_path: Path) -> None:
    scenario = Scenario(
        default_reply=ANNOUNCE,
        turns=(turn(call("set_timer", seconds=1, name="tea"), call("claim"), speech(200)),),
    )
    async with Rig(
        tmp_path, scenario, skills=("system", "scenario", "timers"), earcons=False
    ) as rig:
        coordinator = rig.rt.parts.coordinator
        timers = rig.rt.parts.db.skill_storage("timers")
        coordinator.say("set a tea timer for a second and take a call")
        await until(lambda: coordinator.proactive.claims.active is not None, "the claim starts")
        assert len(await timers.list_settings("timer:")) == 1
        queue = coordinator.proactive.queue
        await until(
            lambda: any((p.dedup_key or "").startswith("timer:") for p in queue.pending()),
            "the timer comes due (the skill hands it over)",
        )
        await audio_passes(rig, 0.3)
        assert rig.announced("timer is done. Tell the user now, in one short sentence.") == 0
        assert not heard(rig), "not over the call"
        hang_up = len(rig.speaker())
        coordinator.press()
        await until(lambda: rig.skill("scenario").events == ["claim:user_ptt"], "hung up")
        await until(lambda: heard(rig), "the timer is announced")
        assert int(announcement_windows(rig)[0]) >= hang_up
        requests = [
            e.response.instructions
            for e in rig.sim.received
            if e.type == "response.create" and e.response is not None and e.response.instructions
        ]
        assert sum("'tea' timer is done" in r for r in requests) == 1
        # Forgotten once heard: when the announcement's turn has ended.
        await until(lambda: coordinator.turn is None, "the announcement's turn ends")
        for _ in range(200):
            if await timers.list_settings("timer:") == []:
                break
            await asyncio.sleep(0.01)
        assert await timers.list_settings("timer:") == [], "fired timers are forgotten"


async def test_an_announcement_cut_by_a_lost_connection_is_spoken_again_after_it(
    tmp_path: Path,
) -> None:
    scenario = Scenario(default_reply=" ".join(["ding"] * 10))
    async with Rig(tmp_path, scenario, earcons=False) as rig:
        skill = rig.skill("scenario")
        waiting = asyncio.create_task(skill.ctx.inject_turn_and_wait(PROMPT))
        await until(lambda: len(announcement_windows(rig)) > 0, "the announcement starts")
        await rig.sim.drop_connections()
        await until(lambda: rig.sim.connection_count >= 2, "reconnected")
        await asyncio.wait_for(waiting, 20)
        assert rig.announced(PROMPT) == 2, "asked again on the new connection"
        await until(rig.idle, "idle")
        last = rig.rt.parts.coordinator.last_turn
        assert last is not None and last.source == "inject" and last.outcome is not None
        assert last.outcome.value == "answered"
        assert rig.sim.violations == []


async def test_an_inject_during_a_session_renewal_is_spoken_on_the_fresh_session(
    tmp_path: Path,
) -> None:
    # Issue 14, long sessions: a renewal between turns loses no queued inject.
    async with Rig(tmp_path, Scenario(default_reply=ANNOUNCE), earcons=False) as rig:
        await until(lambda: rig.rt.connection_state == "connected", "connected")
        await until(rig.idle, "idle")
        connection = rig.rt.parts.connection
        connection.renew()  # as the daemon does between turns
        await rig.skill("scenario").ctx.inject_turn(PROMPT)  # a timer comes due just then
        await until(lambda: rig.sim.connection_count >= 2, "renewed", timeout_s=20)
        await until(lambda: heard(rig), "the announcement is heard")
        await until(rig.idle, "idle")
        assert rig.announced(PROMPT) == 1
        last = rig.rt.parts.coordinator.last_turn
        assert last is not None and last.source == "inject" and last.retries == 0
        types = rig.sim.record.types_received()
        second_session = [i for i, t in enumerate(types) if t == "session.update"][1]
        asked = [
            i
            for i, e in enumerate(rig.sim.received)
            if e.type == "response.create"
            and e.response is not None
            and (e.response.instructions or "").endswith(PROMPT)
        ]
        assert len(asked) == 1 and asked[0] > second_session, "asked on the fresh session"
