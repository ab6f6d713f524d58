"""TurnEffects: one output per call, and each side effect acting when Huxley says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    InputClaim,
    PlaySound,
    SetVolume,
    SpeakVerbatim,
    ToolResult,
)
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
from tests.turns import settle


class Rig:
    def __init__(self) -> None:
        self.skill = GatedSkill("info", "slow", "fx")
        self.skill.results["info"] = ToolResult('{"ok": 1}')
        self.skill.gates["slow"] = asyncio.Event()
        self.provider = RecordingProvider()
        self.audio = RecordingAudio()
        self.volume = RecordingVolume()
        self.media = MediaRunner(self.audio, on_natural_end=lambda s: None)
        self.spawn = Spawner()
        self.effects = TurnEffects(
            host=SkillHost([self.skill], tool_timeout_s=60.0),
            provider=self.provider,
            audio=self.audio,
            volume=self.volume,
            media=self.media,
            spawn=self.spawn,
        )
        self.done: list[ToolOutcome] = []

    def on_done(self, outcome: ToolOutcome) -> None:
        self.done.append(outcome)
        self.effects.apply(outcome, turn_id="t1")

    def start(self, call_id: str, tool: str) -> None:
        self.effects.start(ToolCall("r1", call_id, tool, "{}"), on_done=self.on_done)

    async def effect(self, effect: object) -> None:
        """Run one ``fx`` call whose result carries ``effect``."""
        self.skill.results["fx"] = ToolResult("{}", effect)  # type: ignore[arg-type]
        self.start(f"c{len(self.done) + 1}", "fx")
        await settle()

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
