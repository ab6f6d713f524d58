"""A third-party skill runs in a process of its own: tools, side effects, storage, injects.

The probe skill (``probe_skill.py``, installed as a wheel into a real skills
environment) runs through :class:`RemoteSkill` inside the daemon's
:class:`SkillHost`, as the start sets it up; what crosses is checked on the
daemon's side: PCM by its bytes, storage in the daemon's SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
from pathlib import Path

import pytest

from huxley_sdk import AudioStream, CancelMedia, ClaimEndReason, InputClaim, PlaySound, SetVolume
from huxleyd.skillhost.launchers import SKILL_USER
from huxleyd.skillhost.skillenv import SkillsEnv
from tests.skillhost.probe_skill import tone
from tests.skillhost.rig import probe_rig


async def test_a_tool_runs_in_another_process_without_the_daemons_environment(
    probe_env: SkillsEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-to-a-skill")
    async with probe_rig(probe_env, tmp_path) as rig:
        assert await rig.output("echo", text="héllo") == {"echo": "héllo"}
        who = await rig.output("whoami")
        assert rig.skill.pid not in (None, os.getpid())
        assert "OPENAI_API_KEY" not in who["env"]
        assert who["env"] == ["HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH"]
        if os.geteuid() == 0:
            assert who["uid"] == pwd.getpwnam(SKILL_USER).pw_uid != 0
            assert who["groups"] == []
        assert rig.host.prompt_context() == "probe context: 2 calls"


async def test_storage_is_the_daemons_database(probe_env: SkillsEnv, tmp_path: Path) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        await rig.output("remember", key="colour", value="green")
        assert await rig.db.skill_storage("probe").get_setting("colour") == "green"
        assert await rig.db.skill_storage("other").get_setting("colour") is None
        await rig.db.skill_storage("probe").set_setting("colour", "blue")
        assert await rig.output("recall", key="colour") == {"value": "blue"}


async def test_side_effects_arrive_as_the_sdks_own(probe_env: SkillsEnv, tmp_path: Path) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        beep = (await rig.call("beep")).side_effect
        assert isinstance(beep, PlaySound) and beep.pcm == b"".join(tone(5, 880.0))
        volume = (await rig.call("volume", level=37)).side_effect
        assert isinstance(volume, SetVolume) and volume.level == 37
        assert isinstance((await rig.call("stop")).side_effect, CancelMedia)


async def test_a_set_volume_from_another_process_tells_the_model_what_the_speaker_did(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    """The SDK's contract holds for a skill in its own process: its SetVolume acts
    before its output goes, and the output is its own plus the daemon's ``speaker``
    part (here 140 clamped to 100, and a save the store refused)."""
    from huxleyd.audio.volume import PersistentVolume, SoftwareVolume
    from huxleyd.providers.events import ToolCall
    from huxleyd.turns.effects import TurnEffects
    from huxleyd.turns.media import MediaRunner
    from tests.fakes.turn_ports import RecordingAudio, RecordingProvider, Spawner

    class Full:
        async def load(self) -> int | None:
            return 30

        async def save(self, level: int) -> None:
            raise OSError("database or disk is full")

    class Gain:
        def set_master_gain(self, gain: float) -> None:
            pass

    async with probe_rig(probe_env, tmp_path) as rig:
        audio, provider, spawn = RecordingAudio(), RecordingProvider(), Spawner()
        volume = PersistentVolume(SoftwareVolume(Gain()), Full())
        await volume.restore()
        effects = TurnEffects(
            host=rig.host,
            provider=provider,
            audio=audio,
            volume=volume,
            media=MediaRunner(audio, on_natural_end=lambda s: None),
            spawn=spawn,
        )
        finished = asyncio.Event()
        effects.start(
            ToolCall("r1", "c1", "volume", '{"level": 140}'), on_done=lambda o: finished.set()
        )
        await finished.wait()
        effects.expect_outputs(("c1",))
        effects.send_outputs()
        (output,) = provider.outputs().values()
        speaker = json.loads(output)["speaker"]
        assert speaker["volume"] == 100 == await volume.get_level()
        assert speaker["saved"] is False and "goes back to 30" in speaker["note"]
        await spawn.close()


async def test_an_audio_stream_plays_every_sample_in_order(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        stream = (await rig.call("stream", chunks=60)).side_effect
        assert isinstance(stream, AudioStream) and stream.label == "probe"
        heard = [chunk async for chunk in stream.factory()]
        assert b"".join(heard) == b"".join(tone(60))
        assert await rig.db.skill_storage("probe").get_setting("closed_after") == "60"


async def test_a_stream_waits_for_its_reader_and_is_closed_when_stopped(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    """Backpressure: the host sends no more than its credit ahead of the reader;
    closing the stream runs the skill's ``finally`` (its bookmark) in the host."""
    async with probe_rig(probe_env, tmp_path) as rig:
        stream = (await rig.call("stream", chunks=500)).side_effect
        assert isinstance(stream, AudioStream)
        iterator = stream.factory()
        first = await anext(iterator)
        assert first == tone(1)[0]
        storage = rig.db.skill_storage("probe")
        await asyncio.sleep(0.5)  # time enough to send all 500 if nothing held it back
        sent = int(await storage.get_setting("sent") or 0)
        assert sent <= 10, f"the host ran {sent} chunks ahead of a reader that took 1"
        await iterator.aclose()  # type: ignore[attr-defined]
        assert await storage.get_setting("closed_after") == str(sent)


async def test_a_background_task_injects_a_turn(probe_env: SkillsEnv, tmp_path: Path) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        await rig.output("announce", prompt="the tea is ready", delay_s=0.1)
        assert await asyncio.wait_for(rig.injected.get(), 5) == "the tea is ready"


async def test_a_raising_tool_answers_with_its_class(probe_env: SkillsEnv, tmp_path: Path) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        outcome = await rig.call("fail")
        assert outcome.error == "tool_failed"
        assert outcome.output == '{"error": "tool_failed", "exception": "ValueError"}'
        assert await rig.output("echo", text="still here") == {"echo": "still here"}


async def test_an_input_claim_reaches_the_skill_and_its_speaker(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        claim = (await rig.call("claim")).side_effect
        assert isinstance(claim, InputClaim) and claim.title == "probe call"
        for _ in range(3):
            await claim.on_mic_frame(b"\x01\x00" * 480)
        storage = rig.db.skill_storage("probe")
        assert await storage.get_setting("mic_bytes") == str(3 * 960)
        assert claim.speaker_source is not None
        assert [c async for c in claim.speaker_source] == tone(2, 660.0)
        assert claim.on_claim_end is not None
        await claim.on_claim_end(ClaimEndReason.USER_PTT)
        assert await storage.get_setting("claim_end") == "user_ptt"


async def test_reconfigure_hands_the_new_config_to_the_host(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        assert (await rig.output("setting"))["config"] == {"greeting": "hi"}
        done = await rig.host.reconfigure(rig.context, {"probe": {"greeting": "hola"}}, ["probe"])
        assert done == ["probe"]
        assert (await rig.output("setting"))["config"] == {"greeting": "hola"}


async def test_secrets_are_the_daemons_file(probe_env: SkillsEnv, tmp_path: Path) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        assert await rig.output("secret", key="token", value="t0k") == {"keys": ["token"]}
        saved = json.loads((tmp_path / "secrets" / "probe.json").read_text())
        assert saved == {"token": "t0k"}


async def test_a_claim_started_from_the_context_lives_until_the_daemon_ends_it(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        call = asyncio.create_task(rig.call("call_in"))
        claim, ended = await asyncio.wait_for(rig.claims.get(), 5)
        await claim.on_mic_frame(b"\x02\x00" * 240)
        assert await rig.db.skill_storage("probe").get_setting("mic_bytes") == "480"
        assert not call.done()  # the skill waits on handle.wait_end() across the link
        ended.set_result(ClaimEndReason.PREEMPTED)
        outcome = await asyncio.wait_for(call, 5)
        assert json.loads(outcome.output) == {"ended": "preempted"}


async def test_client_events_reach_the_skill_and_its_server_events_the_daemon(
    probe_env: SkillsEnv, tmp_path: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        await rig.output("listen", key="doorbell")
        assert rig.events.keys() == {"doorbell": ["probe"]}
        assert await rig.events.deliver("doorbell", {"who": "postman"}) == ["probe"]
        stored = await rig.db.skill_storage("probe").get_setting("event")
        assert json.loads(stored or "null") == {"who": "postman"}
        await rig.output("tell", event="ring")
        assert rig.events.emitted[-1] == ("probe", "ring", {"from": "probe"})
