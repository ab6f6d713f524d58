"""TurnEffects: one output per call, and each side effect acting when Huxley says."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    InputClaim,
    PlaySound,
    SetVolume,
    SpeakVerbatim,
    ToolResult,
)
from huxleyd.audio.volume import LevelChange
from huxleyd.providers.events import ToolCall
from huxleyd.skillhost.host import CANCELLED_OUTPUT, SkillHost, ToolOutcome
from huxleyd.turns.effects import TurnEffects
from huxleyd.turns.media import MediaRunner
from tests.fakes.turn_ports import (
    GatedSkill,
    RecordingAudio,
    RecordingProvider,
    RecordingVolume,
    Spawner,
)
from tests.turns import FakeSleeper, settle


class HeldVolume(RecordingVolume):
    """A volume whose changes wait for :attr:`gate` (a hung disk), then answer
    :attr:`answer` (the level read back, whether it was saved) or raise :attr:`error`."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.answer: LevelChange | None = None
        self.error: Exception | None = None

    async def change(self, percent: int) -> LevelChange:
        await self.gate.wait()
        if self.error is not None:
            raise self.error
        recorded = await super().change(percent)
        return self.answer or recorded


class Rig:
    def __init__(self) -> None:
        self.skill = GatedSkill("info", "slow", "fx")
        self.skill.results["info"] = ToolResult('{"ok": 1}')
        self.skill.gates["slow"] = asyncio.Event()
        self.provider = RecordingProvider()
        self.audio = RecordingAudio()
        self.volume = HeldVolume()
        self.media = MediaRunner(self.audio, on_natural_end=lambda s: None)
        self.spawn = Spawner()
        self.sleeper = FakeSleeper()
        self.effects = TurnEffects(
            host=SkillHost([self.skill], tool_timeout_s=60.0),
            provider=self.provider,
            audio=self.audio,
            volume=self.volume,
            media=self.media,
            spawn=self.spawn,
            sleep=self.sleeper.sleep,
        )
        self.done: list[ToolOutcome] = []

    def on_done(self, outcome: ToolOutcome) -> None:
        self.done.append(outcome)
        self.effects.apply(outcome, turn_id="t1")

    def start(self, call_id: str, tool: str) -> None:
        self.effects.start(ToolCall("r1", call_id, tool, "{}"), on_done=self.on_done)

    async def effect(self, effect: object, output: str = "{}") -> None:
        """Run one ``fx`` call whose result carries ``effect``."""
        self.skill.results["fx"] = ToolResult(output, effect)  # type: ignore[arg-type]
        self.start(f"c{len(self.done) + 1}", "fx")
        await settle()

    def answer(self, call_id: str) -> Any:
        """The output the model got for ``call_id``, parsed (the call's only one)."""
        self.effects.expect_outputs((call_id,))
        assert self.effects.outputs_ready
        self.effects.send_outputs()
        sent = [a for n, a in self.provider.commands if n == "send_tool_output" and a[0] == call_id]
        assert len(sent) == 1  # one output per call
        return json.loads(sent[0][1])

    async def close(self) -> None:
        await self.spawn.close()
        await self.media.close()


def ready(rig: Rig) -> bool:
    """Read fresh (mypy keeps an earlier assert's narrowing of the property)."""
    return rig.effects.outputs_ready


def playing(rig: Rig) -> bool:
    return rig.media.playing


def stream(label: str) -> AudioStream:
    async def chunks() -> AsyncIterator[bytes]:
        yield bytes(480)
        await asyncio.Event().wait()  # plays until stopped

    return AudioStream(factory=chunks, label=label)


async def test_outputs_go_out_once_every_awaited_call_finished() -> None:
    rig = Rig()
    rig.start("c1", "info")
    rig.start("c2", "slow")
    rig.effects.expect_outputs(("c1", "c2"))
    await settle()
    assert not ready(rig)  # c2 still runs
    rig.skill.gates["slow"].set()
    await settle()
    assert ready(rig)
    assert rig.effects.send_outputs() is None
    assert rig.provider.outputs() == {"c1": '{"ok": 1}', "c2": "{}"}
    assert not ready(rig)  # nothing awaited any more
    rig.effects.answer_all()
    assert len(rig.provider.commands) == 2  # no second output for either call
    await rig.close()


async def test_answer_all_gives_a_running_call_a_cancelled_output() -> None:
    rig = Rig()
    rig.start("c1", "info")
    rig.start("c2", "slow")
    await settle()
    rig.effects.answer_all()
    assert rig.provider.outputs() == {"c1": '{"ok": 1}', "c2": CANCELLED_OUTPUT}
    rig.effects.new_turn()
    assert len(rig.provider.commands) == 2
    await rig.close()


async def test_a_declined_call_is_answered_cancelled_once() -> None:
    rig = Rig()
    rig.effects.decline("c9")
    rig.effects.decline("c9")
    assert rig.provider.commands == [("send_tool_output", ("c9", CANCELLED_OUTPUT))]
    assert rig.skill.calls == []  # never run
    await rig.close()


async def test_a_new_turn_answers_what_the_last_one_still_owed() -> None:
    rig = Rig()
    rig.start("c1", "slow")
    await settle()
    rig.effects.new_turn()
    assert rig.provider.outputs() == {"c1": CANCELLED_OUTPUT}
    assert not rig.effects.known("c1")
    await rig.close()


async def test_set_volume_acts_when_the_tool_returns_rounded_and_clamped() -> None:
    rig = Rig()
    await rig.effect(SetVolume(42.5))  # type: ignore[arg-type]  # as a model gives it
    await rig.effect(SetVolume(140))
    await rig.effect(SetVolume(-5))
    assert rig.volume.sets == [42, 100, 0]
    assert rig.provider.commands == []  # before any output or follow-up
    await rig.close()


async def test_cancel_media_stops_the_stream_when_the_tool_returns() -> None:
    rig = Rig()
    rig.media.open()
    rig.media.start(stream("book"))
    await settle()
    assert playing(rig)
    await rig.effect(CancelMedia())
    assert not playing(rig)
    assert "cancel-media" in rig.spawn.names()
    await rig.close()


async def test_play_sound_waits_for_play_sounds_and_leads_the_speech() -> None:
    rig = Rig()
    await rig.effect(PlaySound(b"\1\0" * 50))
    assert rig.audio.earcons == []  # not when the tool returns
    rig.effects.play_sounds()
    assert rig.audio.earcons == [(b"\1\0" * 50, True)]  # before_speech
    rig.effects.play_sounds()
    assert len(rig.audio.earcons) == 1  # played once
    await rig.close()


async def test_only_the_last_stream_is_latched_and_handed_over_once() -> None:
    rig = Rig()
    first, last = stream("first"), stream("last")
    claim = InputClaim(on_mic_frame=lambda pcm: asyncio.sleep(0), title="memo")
    await rig.effect(first)
    await rig.effect(last)
    await rig.effect(claim)
    assert not playing(rig)  # latched, not started
    assert rig.effects.take_latched() == (last, claim)
    assert rig.effects.take_latched() == (None, None)
    await rig.close()


async def test_forget_drops_what_is_latched() -> None:
    rig = Rig()
    await rig.effect(PlaySound(b"\1\0"))
    await rig.effect(stream("s"))
    await rig.effect(SpeakVerbatim("Never read."))
    rig.effects.forget()
    rig.effects.play_sounds()
    assert rig.audio.earcons == []
    assert rig.effects.take_latched() == (None, None)
    rig.effects.expect_outputs(("c3",))
    assert rig.effects.send_outputs() is None  # the verbatim text is gone too
    await rig.close()


async def test_speak_verbatim_hands_its_text_back_with_the_outputs() -> None:
    rig = Rig()
    await rig.effect(SpeakVerbatim("Read me exactly."))
    rig.effects.expect_outputs(("c1",))
    assert ready(rig)
    assert rig.effects.send_outputs() == "Read me exactly."
    assert rig.provider.outputs() == {"c1": "{}"}
    await rig.close()


# ------------------------------------------------------------ what a SetVolume's output says


async def test_set_volume_as_asked_and_saved_keeps_the_skills_output_as_it_is() -> None:
    rig = Rig()
    await rig.effect(SetVolume(40), output='{"volume": 40}')
    assert rig.volume.sets == [40]
    rig.effects.expect_outputs(("c1",))
    rig.effects.send_outputs()
    assert rig.provider.outputs() == {"c1": '{"volume": 40}'}  # byte for byte
    await rig.close()


async def test_a_clamped_level_is_said_with_the_level_the_speaker_has() -> None:
    rig = Rig()  # a third-party skill's SetVolume: Huxley validates nothing
    await rig.effect(SetVolume(140), output='{"ok": true, "station": "jazz"}')
    assert rig.volume.sets == [100]
    answer = rig.answer("c1")
    assert answer["ok"] is True and answer["station"] == "jazz"  # the skill's own, kept
    assert answer["speaker"]["volume"] == 100
    assert "at 100" in answer["speaker"]["note"] and "140" in answer["speaker"]["note"]
    assert "saved" not in answer["speaker"]  # it was
    await rig.close()


async def test_a_mixer_step_is_said_with_the_level_read_back() -> None:
    rig = Rig()
    rig.volume.answer = LevelChange(38)  # the mixer's nearest step to 40
    await rig.effect(SetVolume(40), output='{"volume": 40}')
    answer = rig.answer("c1")
    assert answer["volume"] == 40 and answer["speaker"]["volume"] == 38
    await rig.close()


async def test_a_level_not_saved_is_set_for_now_and_says_what_a_restart_brings() -> None:
    rig = Rig()
    rig.volume.answer = LevelChange(40, saved=False, why="disk is full", restart_level=25)
    await rig.effect(SetVolume(40), output='{"volume": 40}')
    answer = rig.answer("c1")
    assert answer["volume"] == 40
    assert answer["speaker"]["volume"] == 40 and answer["speaker"]["saved"] is False
    assert answer["speaker"]["why"] == "disk is full"
    assert "goes back to 25" in answer["speaker"]["note"]
    await rig.close()


async def test_a_hung_volume_is_answered_at_the_bound_and_the_change_goes_on() -> None:
    rig = Rig()
    rig.volume.gate.clear()  # the change (its save) hangs
    await rig.effect(SetVolume(40), output='{"volume": 40}')
    rig.effects.expect_outputs(("c1",))
    assert not ready(rig)  # the call waits for the change, up to the bound
    await rig.sleeper.advance(2.0)
    answer = rig.answer("c1")
    assert answer["speaker"]["confirmed"] is False
    assert answer["speaker"]["note"] == "the volume is still being set to 40: not confirmed"
    rig.volume.gate.set()  # the disk answers after all
    await settle()
    assert rig.volume.sets == [40]  # the change was not dropped
    rig.effects.answer_all()
    assert rig.provider.names().count("send_tool_output") == 1  # still one output
    await rig.close()


async def test_a_volume_that_fails_says_so() -> None:
    rig = Rig()
    rig.volume.error = OSError("amixer: no such card")
    await rig.effect(SetVolume(40), output='{"volume": 40}')
    answer = rig.answer("c1")
    assert answer["speaker"]["confirmed"] is False
    assert answer["speaker"]["why"] == "OSError: amixer: no such card"
    assert answer["speaker"]["note"] == "setting the volume failed"
    await rig.close()


async def test_a_level_not_saved_before_any_was_read_says_it_will_not_survive_a_restart() -> None:
    rig = Rig()  # the level a restart brings is unknown (nothing read or saved yet)
    rig.volume.answer = LevelChange(30, saved=False, why="read-only", restart_level=None)
    await rig.effect(SetVolume(60), output='{"volume": 60}')
    assert rig.answer("c1")["speaker"] == {
        "volume": 30,
        "saved": False,
        "why": "read-only",
        "note": "the speaker is at 30, the nearest it can do to 60; "
        "it is set for now, but could not be saved: it will not survive a restart",
    }
    await rig.close()


async def test_a_call_cancelled_while_its_volume_changes_is_answered_once_and_the_change_lands() -> (
    None
):
    rig = Rig()
    rig.volume.gate.clear()
    await rig.effect(SetVolume(40), output='{"volume": 40}')
    rig.effects.answer_all()  # a barge-in
    assert rig.provider.outputs() == {"c1": CANCELLED_OUTPUT}
    rig.volume.gate.set()
    await settle()
    assert rig.volume.sets == [40]  # the user asked; the speaker has it
    rig.effects.new_turn()
    assert rig.provider.names().count("send_tool_output") == 1
    await rig.close()


async def test_a_skill_output_that_is_no_json_object_is_kept_whole_beside_the_speaker() -> None:
    rig = Rig()
    await rig.effect(SetVolume(140), output="louder now")
    answer = rig.answer("c1")
    assert answer["output"] == "louder now" and answer["speaker"]["volume"] == 100
    await rig.close()
