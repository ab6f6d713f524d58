"""The memos skill: its InputClaim is started on the test recorder as the runtime
would start it, fed mic frames, and ended by the button or the time limit."""

from __future__ import annotations

import asyncio
import json
import wave
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxley_sdk import AudioStream, ClaimEndReason, ContentType, InjectPriority, InputClaim
from huxley_sdk.testing import MemoryStorage, Recorder, ctx_recorder, make_test_context
from huxleyd.skills.memos import META_PREFIX, MemosSkill

FRAME_BYTES = 960  # 20 ms of PCM16 24 kHz mono


class FakeWallClock:
    def __init__(self) -> None:
        self.now = datetime(2024, 3, 10, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def tone(seconds: float, hz: float) -> bytes:
    t = np.arange(round(seconds * 24000)) / 24000
    return (np.sin(2 * np.pi * hz * t) * 8000).astype("<i2").tobytes()


class SuspendingStorage(MemoryStorage):
    """Storage that yields to the loop on writes, as a real (threaded) store does."""

    async def set_setting(self, key: str, value: str) -> None:
        await asyncio.sleep(0)
        await super().set_setting(key, value)


async def setup_skill(
    data_dir: Path, clock: FakeWallClock | None = None, slack_s: float = 10.0, **config: Any
) -> tuple[MemosSkill, Recorder, MemoryStorage]:
    skill = MemosSkill(now=clock or FakeWallClock(), gap_ms=100, backstop_slack_s=slack_s)
    storage = SuspendingStorage()
    ctx = make_test_context(name="memos", persona_data_dir=data_dir, config=config, storage=storage)
    await skill.setup(ctx)
    return skill, ctx_recorder(ctx), storage


async def record(
    skill: MemosSkill, rec: Recorder, pcm: bytes, end: ClaimEndReason | None
) -> ClaimEndReason:
    """Run one recording: the tool, the claim latched by the 'runtime', frames, the end."""
    result = await skill.handle("record_memo", {})
    claim = result.side_effect
    assert isinstance(claim, InputClaim)
    handle = await rec.start_input_claim(claim)
    for start in range(0, len(pcm), FRAME_BYTES):
        await claim.on_mic_frame(pcm[start : start + FRAME_BYTES])
        await asyncio.sleep(0)  # frames arrive over time; helper tasks may run
    if end is not None:
        await rec.claims[-1].end(end)
    reason = await asyncio.wait_for(handle.wait_end(), 1.0)
    # wait_end resolves before on_claim_end has run; the skill's helper task
    # that ended the claim is done only once on_claim_end returned.
    helpers = [t.task for t in rec.tasks]
    await asyncio.wait_for(asyncio.gather(*helpers, return_exceptions=True), 1.0)
    return reason


def wavs(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "memos").glob("*.wav"))


def read_wav(path: Path) -> tuple[tuple[int, int, int], bytes]:
    with wave.open(str(path), "rb") as wav:
        shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
        return shape, wav.readframes(wav.getnframes())


async def test_record_writes_a_valid_wav_until_the_button(tmp_path: Path) -> None:
    skill, rec, storage = await setup_skill(tmp_path)
    result = await skill.handle("record_memo", {})
    assert json.loads(result.output) == {"recording": True, "max_seconds": 60}
    assert isinstance(result.side_effect, InputClaim)
    assert result.side_effect.title == "Recording a note"
    assert wavs(tmp_path) == []  # nothing until frames arrive

    pcm = tone(2.0, 440)
    assert await record(skill, rec, pcm, ClaimEndReason.USER_PTT) is ClaimEndReason.USER_PTT
    [path] = wavs(tmp_path)
    assert read_wav(path) == ((1, 2, 24000), pcm)
    meta = json.loads(storage.data[META_PREFIX + path.stem])
    assert (meta["duration_s"], meta["ended_by"]) == (2.0, "user_ptt")
    [turn] = rec.injected
    assert "voice note of 2 seconds was saved" in turn.prompt
    assert turn.priority is InjectPriority.NORMAL


async def test_the_time_limit_ends_the_claim_through_cancel_active_claim(tmp_path: Path) -> None:
    skill, rec, storage = await setup_skill(tmp_path, max_seconds=1)
    pcm = tone(1.5, 300)
    # No end by the test: the skill asks the runtime to end the claim.
    assert await record(skill, rec, pcm, end=None) is ClaimEndReason.NATURAL
    assert rec.active_claim is None
    [path] = wavs(tmp_path)
    assert read_wav(path)[1] == pcm[:48000]  # exactly the limit, the rest dropped
    # Saved although on_claim_end ran inside the skill's own limit task.
    assert json.loads(storage.data[META_PREFIX + path.stem])["duration_s"] == 1.0
    assert "(the time limit was reached)" in rec.injected[0].prompt


async def test_a_mic_that_stops_delivering_is_ended_by_the_backstop(tmp_path: Path) -> None:
    skill, rec, _ = await setup_skill(tmp_path, slack_s=0.01, max_seconds=0.05)
    # One 20 ms frame, then silence from the mic: the backstop fires at ~60 ms.
    assert await record(skill, rec, tone(0.02, 440), end=None) is ClaimEndReason.NATURAL
    assert "nothing was recorded" in rec.injected[0].prompt


async def test_a_recording_too_short_is_discarded(tmp_path: Path) -> None:
    skill, rec, storage = await setup_skill(tmp_path)
    await record(skill, rec, tone(0.1, 440), ClaimEndReason.USER_PTT)
    assert wavs(tmp_path) == []
    assert storage.data == {}
    assert "nothing was recorded" in rec.injected[0].prompt


async def test_play_list_and_delete(tmp_path: Path) -> None:
    clock = FakeWallClock()
    skill, rec, storage = await setup_skill(tmp_path, clock, timezone="Europe/Madrid")
    first, second = tone(1.0, 300), tone(0.6, 600)
    await record(skill, rec, first, ClaimEndReason.USER_PTT)
    clock.now += timedelta(minutes=5)
    await record(skill, rec, second, ClaimEndReason.PREEMPTED)

    listed = json.loads((await skill.handle("list_memos", {})).output)
    assert listed == {
        "count": 2,
        "total_seconds": 2,
        "memos": [
            {"recorded": "Sunday 10 March 13:04", "seconds": 1},
            {"recorded": "Sunday 10 March 12:59", "seconds": 1},
        ],
    }
    result = await skill.handle("play_memos", {})
    assert json.loads(result.output)["playing"] == 2
    stream = result.side_effect
    assert isinstance(stream, AudioStream)
    assert stream.content_type is ContentType.NONMIXABLE
    played = b"".join([chunk async for chunk in stream.factory()])
    assert played == second + bytes(4800) + first  # newest first, 100 ms gap

    only_latest = await skill.handle("play_memos", {"count": 1})
    assert isinstance(only_latest.side_effect, AudioStream)
    assert b"".join([c async for c in only_latest.side_effect.factory()]) == second

    deleted = json.loads((await skill.handle("delete_memos", {"which": "latest"})).output)
    assert deleted == {"deleted": 1, "remaining": 1}
    assert [read_wav(p)[1] for p in wavs(tmp_path)] == [first]
    deleted = json.loads((await skill.handle("delete_memos", {"which": "all"})).output)
    assert deleted == {"deleted": 1, "remaining": 0}
    assert storage.data == {}
    for tool, args in (("play_memos", {}), ("delete_memos", {"which": "all"})):
        empty = await skill.handle(tool, args)
        assert (json.loads(empty.output)["error"], empty.side_effect) == ("no_memos", None)


async def test_a_wav_left_by_a_power_cut_still_lists_and_plays(tmp_path: Path) -> None:
    skill, _, _ = await setup_skill(tmp_path)
    pcm = tone(0.8, 500)
    result = await skill.handle("record_memo", {})
    assert isinstance(result.side_effect, InputClaim)
    for start in range(0, len(pcm), FRAME_BYTES):
        await result.side_effect.on_mic_frame(pcm[start : start + FRAME_BYTES])
    # The power goes: no on_claim_end, no metadata. A new start finds the file.
    skill2, _, _ = await setup_skill(tmp_path)
    listed = json.loads((await skill2.handle("list_memos", {})).output)
    assert (listed["count"], listed["memos"][0]["seconds"]) == (1, 1)
    played = await skill2.handle("play_memos", {})
    assert isinstance(played.side_effect, AudioStream)
    assert b"".join([c async for c in played.side_effect.factory()]) == pcm


async def test_bad_max_seconds_fails_setup_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'max_seconds'"):
        await setup_skill(tmp_path, max_seconds=0)
