"""A reply's end: what arrived plays out, then the turn ends once, and a barge-in stops it.

:class:`~huxleyd.turns.barrier.TurnBarrier` alone, against a turn and a
reply that record what was asked of them; the coordinator's tests drive it
whole (tests/turns/test_coordinator.py, test_reply_heard.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from huxley_sdk import AudioStream, InputClaim
from huxleyd.audio.types import Earcon
from huxleyd.turns.barrier import TurnBarrier
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnSource, TurnState


class Turn:
    """The coordinator's edge, recorded."""

    def __init__(self) -> None:
        self.state = TurnState.IN_RESPONSE
        self.turn: TurnRecord | None = TurnRecord(source=TurnSource.PTT)
        self.ended: list[tuple[TurnOutcome, AudioStream | None]] = []

    def set_state(self, state: TurnState) -> None:
        self.state = state

    def finish_turn(
        self,
        outcome: TurnOutcome,
        *,
        next_turn_follows: bool = False,
        then_play: AudioStream | None = None,
    ) -> None:
        self.ended.append((outcome, then_play))
        self.turn, self.state = None, TurnState.IDLE


class Reply:
    def __init__(self, stream: AudioStream | None, claim: InputClaim | None) -> None:
        self.heard = asyncio.Event()
        self.latched = (stream, claim)

    async def played_out(self) -> None:
        await self.heard.wait()

    def take_latched(self) -> tuple[AudioStream | None, InputClaim | None]:
        latched, self.latched = self.latched, (None, None)
        return latched


class Cues:
    def __init__(self) -> None:
        self.played: list[Earcon] = []

    def earcon(self, name: Earcon, *, before_speech: bool) -> None:
        self.played.append(name)


async def no_frames() -> Any:
    yield b""


def rig(
    stream: AudioStream | None = None, claim: InputClaim | None = None
) -> tuple[TurnBarrier, Turn, Reply, Cues, list[InputClaim]]:
    turn, reply, cues = Turn(), Reply(stream, claim), Cues()
    claims: list[InputClaim] = []
    barrier = TurnBarrier(turn, replies=reply, outputs=cues, start_claim=claims.append)
    return barrier, turn, reply, cues, claims


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_turn_ends_once_its_speech_played_out_then_what_it_latched_starts() -> None:
    stream = AudioStream(factory=no_frames)
    claim = InputClaim(on_mic_frame=lambda _pcm: asyncio.sleep(0))
    barrier, turn, reply, _cues, claims = rig(stream, claim)
    barrier.after_speech(TurnOutcome.ANSWERED, terminal=True)
    assert turn.state is TurnState.APPLYING_SIDE_EFFECTS
    await settle()
    assert turn.ended == [] and claims == [], "nothing before the speech played out"
    reply.heard.set()
    await settle()
    assert turn.ended == [(TurnOutcome.ANSWERED, stream)]
    assert claims == [claim]


async def test_a_lost_turn_plays_out_then_one_cue_the_most_specific_named() -> None:
    barrier, turn, reply, cues, _claims = rig()
    barrier.fail()
    assert barrier.failing
    barrier.fail(Earcon.DEGRADED)  # the connection ended for good: its own cue
    barrier.fail()  # a later generic report changes nothing
    reply.heard.set()
    await settle()
    assert cues.played == [Earcon.DEGRADED]
    assert turn.ended == [(TurnOutcome.FAILED, None)]


async def test_a_barge_in_stops_the_barrier_and_nothing_it_latched_starts() -> None:
    claim = InputClaim(on_mic_frame=lambda _pcm: asyncio.sleep(0))
    barrier, turn, reply, cues, claims = rig(AudioStream(factory=no_frames), claim)
    barrier.after_speech(TurnOutcome.ANSWERED, terminal=True)
    barrier.cancel()
    reply.heard.set()
    await settle()
    assert turn.ended == [] and claims == [] and cues.played == []
    await barrier.close()
