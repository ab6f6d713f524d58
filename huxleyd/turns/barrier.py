"""The end of a reply: let what arrived play out, then end the turn once.

Layer: pure turn logic. :class:`TurnBarrier` owns the task that waits for
the speech to play to its last sample and the turn it is failing, if any.
Two ways in, both from the :class:`~huxleyd.turns.coordinator.Coordinator`
(and, through it, from :class:`~huxleyd.turns.replies.Replies`):

- :meth:`TurnBarrier.after_speech`: the terminal barrier. The reply arrived
  whole; once it has played out the turn ends with its outcome and, when
  terminal, the stream or claim its tools latched starts.
- :meth:`TurnBarrier.fail`: the turn lost something. What arrived plays out,
  then exactly one cue, then the turn ends ``failed`` (docs/providers.md,
  "What the listener hears").

A barge-in or a new turn cancels the barrier (:meth:`TurnBarrier.cancel`); a
barrier that wakes to find its turn gone or moved on does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from huxley_sdk import AudioStream, InputClaim
from huxleyd.audio.types import Earcon
from huxleyd.logs import get_logger
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnState

log = get_logger("huxleyd.turns")


class EndingTurn(Protocol):
    """The coordinator, as the barrier sees it: the turn, its state, how it ends."""

    @property
    def state(self) -> TurnState: ...

    @property
    def turn(self) -> TurnRecord | None: ...

    def set_state(self, state: TurnState) -> None: ...

    def finish_turn(
        self,
        outcome: TurnOutcome,
        *,
        next_turn_follows: bool = False,
        then_play: AudioStream | None = None,
    ) -> None: ...


class Reply(Protocol):
    """The reply, as the barrier sees it (:class:`~huxleyd.turns.replies.Replies`)."""

    async def played_out(self) -> None:
        """Return once what arrived of the reply has played to its last sample."""

    def take_latched(self) -> tuple[AudioStream | None, InputClaim | None]:
        """The stream and claim the turn's tools latched, handed over once."""


class Cues(Protocol):
    """Where the fail cue plays (:class:`~huxleyd.turns.outputs.TurnOutputs`)."""

    def earcon(self, name: Earcon, *, before_speech: bool) -> None: ...


class TurnBarrier:
    """Waits for a reply to play out, then ends the turn (see the module docstring)."""

    def __init__(
        self,
        turn: EndingTurn,
        *,
        replies: Reply,
        outputs: Cues,
        start_claim: Callable[[InputClaim], Any],
    ) -> None:
        self._turn = turn
        self._replies = replies
        self._outputs = outputs
        self._start_claim = start_claim
        self._task: asyncio.Task[None] | None = None
        self._failing: TurnRecord | None = None
        """The turn :meth:`fail` is ending (None: none)."""
        self._fail_cue = Earcon.ERROR

    def after_speech(self, outcome: TurnOutcome, *, terminal: bool = False) -> None:
        """The terminal barrier: let the speech play out, then start latched media."""
        self._turn.set_state(TurnState.APPLYING_SIDE_EFFECTS)
        turn = self._turn.turn
        self._task = asyncio.get_running_loop().create_task(
            self._barrier_then(turn, outcome, terminal), name="terminal-barrier"
        )

    async def _barrier_then(
        self, turn: TurnRecord | None, outcome: TurnOutcome, terminal: bool
    ) -> None:
        await self._replies.played_out()
        if not self._still(turn):
            return  # interrupted while the speech played out
        self._task = None
        stream, claim = self._replies.take_latched()
        self._turn.finish_turn(outcome, then_play=stream if terminal else None)
        if terminal and claim is not None:
            try:
                self._start_claim(claim)
            except Exception as exc:  # ClaimBusyError, or a malformed claim
                log.error("claim_refused", error=str(exc))

    def fail(self, cue: Earcon = Earcon.ERROR) -> None:
        """The turn lost something (a reply that never arrived whole, a tool
        output the service never got): whatever arrived plays to its last
        sample, then exactly one cue (``cue``: the error earcon, or the
        connection's failure cue when the provider ended it for good), then
        the turn ends ``failed``.

        One cue per turn whoever reports the loss (an ``error`` event, the
        failed response that follows it, the connection's end); a later call
        for the same turn may only name a more specific cue. A reply that had
        arrived whole (the terminal barrier runs) loses nothing.
        """
        turn = self._turn.turn
        if turn is None:
            return
        if self._failing is turn:
            self._fail_cue = cue if cue is not Earcon.ERROR else self._fail_cue
            return
        if self._turn.state is TurnState.APPLYING_SIDE_EFFECTS:
            return
        self._failing, self._fail_cue = turn, cue
        self._turn.set_state(TurnState.APPLYING_SIDE_EFFECTS)
        self._task = asyncio.get_running_loop().create_task(
            self._fail_then(turn), name="terminal-barrier"
        )

    @property
    def failing(self) -> bool:
        """The turn lost something and plays out what arrived before its cue."""
        return self._turn.turn is not None and self._failing is self._turn.turn

    async def _fail_then(self, turn: TurnRecord) -> None:
        await self._replies.played_out()
        if not self._still(turn):
            return  # interrupted while what arrived played out
        self._task = None
        self._outputs.earcon(self._fail_cue, before_speech=False)
        self._turn.finish_turn(TurnOutcome.FAILED)

    def _still(self, turn: TurnRecord | None) -> bool:
        return self._turn.turn is turn and self._turn.state is TurnState.APPLYING_SIDE_EFFECTS

    def cancel(self) -> None:
        """Barge-in: the barrier waits no more (what it would have started never starts)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
