"""Input claims: one at a time, mic frames to the skill, every way of ending, exactly once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from huxley_sdk.context import ClaimHandle
from huxley_sdk.types import ClaimBusyError, ClaimEndReason, InputClaim
from huxleyd.turns.claims import PTT_GRACE_S, ActiveClaim, ClaimRegistry
from tests.fakes.clock import settle

FRAME = b"\x01\x00" * 480  # 20 ms of PCM16 at 24 kHz


def live(claims: ClaimRegistry) -> ActiveClaim | None:
    """``claims.active``, read fresh (mypy would keep an earlier assert's narrowing)."""
    return claims.active


class Skill:
    """Records what a claiming skill is told."""

    def __init__(self, *, fail_on_frame: int | None = None, fail_on_end: bool = False) -> None:
        self.frames: list[bytes] = []
        self.ends: list[ClaimEndReason] = []
        self.fail_on_frame = fail_on_frame
        self.fail_on_end = fail_on_end

    async def on_mic_frame(self, pcm: bytes) -> None:
        if self.fail_on_frame is not None and len(self.frames) + 1 == self.fail_on_frame:
            raise ValueError("skill bug in on_mic_frame")
        self.frames.append(pcm)

    async def on_claim_end(self, reason: ClaimEndReason) -> None:
        await asyncio.sleep(0)
        self.ends.append(reason)
        if self.fail_on_end:
            raise RuntimeError("skill bug in on_claim_end")

    def claim(self, speaker: AsyncIterator[bytes] | None = None, title: str = "memo") -> InputClaim:
        return InputClaim(
            on_mic_frame=self.on_mic_frame,
            speaker_source=speaker,
            on_claim_end=self.on_claim_end,
            title=title,
        )


class Recorder:
    """The coordinator's ``on_end`` hook and a comms-source writer."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, ClaimEndReason]] = []
        self.written: list[bytes] = []

    async def on_end(self, claim: ActiveClaim, reason: ClaimEndReason) -> None:
        self.ended.append((claim.id, reason))

    async def write(self, pcm: bytes) -> None:
        await asyncio.sleep(0)
        self.written.append(pcm)


async def test_mic_frames_reach_the_skill_and_cancel_ends_natural() -> None:
    skill, rec = Skill(), Recorder()
    claims = ClaimRegistry(on_end=rec.on_end)
    handle = claims.start(skill.claim(), now=10.0)
    assert isinstance(handle.handle, ClaimHandle) and claims.active is handle
    for _ in range(3):
        assert await claims.deliver_mic_frame(FRAME) is True
    assert skill.frames == [FRAME] * 3
    handle.cancel()
    handle.cancel()  # idempotent
    assert await handle.wait_end() is ClaimEndReason.NATURAL
    assert skill.ends == [ClaimEndReason.NATURAL]
    assert rec.ended == [(handle.id, ClaimEndReason.NATURAL)]
    assert live(claims) is None
    assert await claims.deliver_mic_frame(FRAME) is False  # back to the provider
    assert len(skill.frames) == 3


async def test_one_claim_at_a_time() -> None:
    claims = ClaimRegistry()
    first = claims.start(Skill().claim(title="call"), now=0.0)
    with pytest.raises(ClaimBusyError, match="'call'"):
        claims.start(Skill().claim(title="memo"), now=1.0)
    await first.end(ClaimEndReason.PREEMPTED)
    second = claims.start(Skill().claim(title="memo"), now=2.0)
    assert claims.active is second and second.id != first.id


async def test_end_is_idempotent_and_on_claim_end_runs_once() -> None:
    skill, rec = Skill(), Recorder()
    claims = ClaimRegistry(on_end=rec.on_end)
    handle = claims.start(skill.claim(), now=0.0)
    results = await asyncio.gather(
        claims.end(ClaimEndReason.PREEMPTED),
        handle.end(ClaimEndReason.USER_PTT),
        handle.end(ClaimEndReason.ERROR),
    )
    assert list(results) == [True, False, False]
    handle.cancel()
    await settle()
    assert skill.ends == [ClaimEndReason.PREEMPTED]
    assert rec.ended == [(handle.id, ClaimEndReason.PREEMPTED)]
    assert await handle.wait_end() is ClaimEndReason.PREEMPTED
    assert await claims.end(ClaimEndReason.NATURAL) is False  # none active


async def test_ptt_within_the_grace_is_ignored_then_hangs_up() -> None:
    skill = Skill()
    claims = ClaimRegistry()
    handle = claims.start(skill.claim(), now=100.0)
    assert await claims.ptt_pressed(100.0 + PTT_GRACE_S - 0.001) is False
    assert claims.active is handle and skill.ends == []
    assert await claims.ptt_pressed(100.0 + PTT_GRACE_S) is True
    assert await handle.wait_end() is ClaimEndReason.USER_PTT
    assert await claims.ptt_pressed(200.0) is False  # no claim: the coordinator's turn


async def test_a_raising_mic_callback_ends_with_error_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    skill, rec = Skill(fail_on_frame=2), Recorder()
    claims = ClaimRegistry(on_end=rec.on_end)
    handle = claims.start(skill.claim(), now=0.0)
    with caplog.at_level(logging.INFO, logger="huxleyd.turns"):
        assert await claims.deliver_mic_frame(FRAME) is True
        assert await claims.deliver_mic_frame(FRAME) is False
    assert await handle.wait_end() is ClaimEndReason.ERROR
    assert skill.ends == [ClaimEndReason.ERROR]
    assert rec.ended == [(handle.id, ClaimEndReason.ERROR)]
    failed = next(r for r in caplog.records if "claim_mic_frame_failed" in r.getMessage())
    assert failed.exc_info is not None


async def test_a_raising_end_callback_is_swallowed_and_the_end_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    skill, rec = Skill(fail_on_end=True), Recorder()
    claims = ClaimRegistry(on_end=rec.on_end)
    handle = claims.start(skill.claim(), now=0.0)
    with caplog.at_level(logging.INFO, logger="huxleyd.turns"):
        assert await handle.end(ClaimEndReason.USER_PTT) is True
    assert skill.ends == [ClaimEndReason.USER_PTT]
    assert rec.ended == [(handle.id, ClaimEndReason.USER_PTT)]  # the coordinator still hears
    assert await handle.wait_end() is ClaimEndReason.USER_PTT
    assert any("claim_end_callback_failed" in r.getMessage() for r in caplog.records)


async def test_speaker_source_is_pumped_and_its_end_ends_the_claim_natural() -> None:
    skill, rec = Skill(), Recorder()
    closed: list[bool] = []

    async def far_end() -> AsyncIterator[bytes]:
        try:
            for i in range(4):
                yield bytes([i]) * 960
        finally:
            closed.append(True)

    claims = ClaimRegistry(on_end=rec.on_end)
    handle = claims.start(skill.claim(far_end()), now=0.0)
    await handle.pump_speaker(rec.write)
    assert rec.written == [bytes([i]) * 960 for i in range(4)]
    assert handle.speaker_bytes == 4 * 960
    assert await handle.wait_end() is ClaimEndReason.NATURAL
    assert closed == [True]


async def test_a_raising_speaker_source_ends_with_error() -> None:
    skill, rec = Skill(), Recorder()

    async def broken() -> AsyncIterator[bytes]:
        yield b"\x00\x00" * 480
        raise ConnectionResetError("call dropped")

    claims = ClaimRegistry()
    handle = claims.start(skill.claim(broken()), now=0.0)
    await handle.pump_speaker(rec.write)
    assert len(rec.written) == 1
    assert await handle.wait_end() is ClaimEndReason.ERROR
    assert skill.ends == [ClaimEndReason.ERROR]


async def test_ending_the_claim_stops_a_blocked_pump_and_closes_the_source() -> None:
    skill, rec = Skill(), Recorder()
    closed: list[bool] = []
    never = asyncio.Event()

    async def quiet_line() -> AsyncIterator[bytes]:
        try:
            yield b"\x00\x00" * 480
            await never.wait()  # the far end says nothing for a long time
            yield b"never"
        finally:
            closed.append(True)

    claims = ClaimRegistry(on_end=rec.on_end)
    handle = claims.start(skill.claim(quiet_line()), now=0.0)
    pump = asyncio.create_task(handle.pump_speaker(rec.write))
    await settle()
    assert len(rec.written) == 1 and not pump.done()
    assert await claims.ptt_pressed(5.0) is True
    await pump  # returns normally: the claim's own stop, not an error
    assert closed == [True]
    assert skill.ends == [ClaimEndReason.USER_PTT]  # not NATURAL from the pump's exit
    assert rec.ended == [(handle.id, ClaimEndReason.USER_PTT)]


async def test_cancelling_the_pump_from_outside_still_propagates() -> None:
    skill, rec = Skill(), Recorder()

    async def endless() -> AsyncIterator[bytes]:
        while True:
            await asyncio.sleep(0)
            yield b"\x00\x00"

    claims = ClaimRegistry()
    handle = claims.start(skill.claim(endless()), now=0.0)
    pump = asyncio.create_task(handle.pump_speaker(rec.write))
    await settle()
    pump.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pump
    assert claims.active is handle  # the coordinator decides how the claim ends


async def test_a_claim_without_a_speaker_source_pumps_nothing() -> None:
    rec = Recorder()
    claims = ClaimRegistry()
    handle = claims.start(Skill().claim(), now=0.0)
    await handle.pump_speaker(rec.write)
    assert rec.written == [] and claims.active is handle


async def test_start_rejects_what_is_not_a_claim() -> None:
    claims = ClaimRegistry()
    with pytest.raises(TypeError, match="InputClaim"):
        claims.start("call", now=0.0)  # type: ignore[arg-type]
    assert claims.active is None
