"""The turn's own state machine: how a turn begins, moves, is cut and ends.

Layer: pure turn logic over the coordinator's parts. :class:`TurnLifecycle`
is the half of the :class:`~huxleyd.turns.coordinator.Coordinator` that owns
the turn (its :class:`~huxleyd.turns.state.TurnState` and
:class:`~huxleyd.turns.state.TurnRecord`); the coordinator is the other half,
the inputs that start and steer turns (the button, the wake word, text,
media, injects and claims, the connection). The seam is the
:class:`~huxleyd.turns.replies.TurnControl` edge: :meth:`set_state`,
:meth:`after_speech` and :meth:`finish_turn` are all the model's side
(``Replies``) may do to a turn, and the inputs use the same methods.

- :meth:`begin_turn`: ends a turn still running (interrupted), refreshes the
  instructions, publishes :class:`~huxleyd.turns.news.TurnBegan`.
- :meth:`set_state`: mic capture and the LED activity follow the state.
- :meth:`after_speech`: the terminal barrier, a task that lets the speech
  play out, then starts the latched stream or claim.
- :meth:`fail`: the turn lost something: what arrived plays out, then one
  cue, then ``failed`` (docs/providers.md, "What the listener hears").
- :meth:`interrupt`: barge-in: silence now, cancel the reply, truncate to
  what was heard, cancel the barrier.
- :meth:`finish_turn`: the journal line, media back, a renewal if due, the
  injects that waited.

The coordinator constructs every attribute declared below; this class has
no constructor of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from huxley_sdk import AudioStream
from huxleyd.audio.types import Earcon
from huxleyd.bus import Bus
from huxleyd.logs import get_logger
from huxleyd.turns.capture import MicCapture
from huxleyd.turns.instructions import SessionInstructions
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.mute import MuteSwitch
from huxleyd.turns.news import Activity, TurnBegan, TurnNews
from huxleyd.turns.outputs import TurnOutputs
from huxleyd.turns.proactive import Proactive
from huxleyd.turns.replies import Replies
from huxleyd.turns.state import CutBy, TurnOutcome, TurnRecord, TurnSource, TurnState
from huxleyd.turns.wake import WakeWord

log = get_logger("huxleyd.turns")


class TurnLifecycle:
    """The turn: its state, how it begins and how it ends (barge-in, the barrier)."""

    state: TurnState
    turn: TurnRecord | None
    last_turn: TurnRecord | None
    media: MediaRunner
    proactive: Proactive
    _no_turn: asyncio.Event
    """Set while no turn runs (``turn`` is None)."""
    _barrier: asyncio.Task[None] | None
    _failing: TurnRecord | None
    """The turn :meth:`fail` is ending (None: none)."""
    _fail_cue: Earcon
    _replies: Replies
    _outputs: TurnOutputs
    _capture: MicCapture
    _mute: MuteSwitch
    _wake: WakeWord | None
    _news: Bus[TurnNews]
    _instructions: str
    _session_instructions: SessionInstructions | None
    _renew_session_if_due: Callable[[], None] | None

    def set_state(self, state: TurnState) -> None:
        """Move the turn to ``state``; mic capture and the LED activity follow."""
        if state is self.state:
            return
        self.state = state
        self._capture.listening(state is TurnState.LISTENING)
        if state is TurnState.LISTENING:
            self._outputs.show(Activity.LISTENING)
        elif state in (TurnState.COMMITTING, TurnState.AWAITING_NEXT_RESPONSE):
            self._outputs.show(Activity.THINKING)
        elif state is TurnState.IDLE:
            self._outputs.show(self._idle_activity())

    def after_speech(self, outcome: TurnOutcome, *, terminal: bool = False) -> None:
        """The terminal barrier: let the speech play out, then start latched media."""
        self.set_state(TurnState.APPLYING_SIDE_EFFECTS)
        turn = self.turn
        self._barrier = asyncio.get_running_loop().create_task(
            self._barrier_then(turn, outcome, terminal), name="terminal-barrier"
        )

    async def _barrier_then(
        self, turn: TurnRecord | None, outcome: TurnOutcome, terminal: bool
    ) -> None:
        await self._replies.played_out()
        if self.turn is not turn or self.state is not TurnState.APPLYING_SIDE_EFFECTS:
            return  # interrupted while the speech played out
        self._barrier = None
        stream, claim = self._replies.take_latched()
        self.finish_turn(outcome, then_play=stream if terminal else None)
        if terminal and claim is not None:
            try:
                self.proactive.start_claim(claim)
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
        turn = self.turn
        if turn is None:
            return
        if self._failing is turn:
            self._fail_cue = cue if cue is not Earcon.ERROR else self._fail_cue
            return
        if self.state is TurnState.APPLYING_SIDE_EFFECTS:
            return
        self._failing, self._fail_cue = turn, cue
        self.set_state(TurnState.APPLYING_SIDE_EFFECTS)
        self._barrier = asyncio.get_running_loop().create_task(
            self._fail_then(turn), name="terminal-barrier"
        )

    @property
    def failing(self) -> bool:
        """The turn lost something and plays out what arrived before its cue."""
        return self.turn is not None and self._failing is self.turn

    async def _fail_then(self, turn: TurnRecord) -> None:
        await self._replies.played_out()
        if self.turn is not turn or self.state is not TurnState.APPLYING_SIDE_EFFECTS:
            return  # interrupted while what arrived played out
        self._barrier = None
        self._outputs.earcon(self._fail_cue, before_speech=False)
        self.finish_turn(TurnOutcome.FAILED)

    def finish_turn(
        self,
        outcome: TurnOutcome,
        *,
        next_turn_follows: bool = False,
        then_play: AudioStream | None = None,
    ) -> None:
        """End the turn. ``next_turn_follows``: keep media in the background (no blip).

        ``then_play`` starts after dialog gives the speaker back, so the new
        stream does not arrive preempted (and, with patience 0, evicted).
        """
        turn = self.turn
        self._replies.end_turn()
        if turn is not None and turn.source is TurnSource.WAKE and self._wake is not None:
            self._wake.turn_over()
        if turn is not None:
            turn.outcome = outcome
            self._outputs.journal(turn)
            self.last_turn = turn
            self.turn = None
            self._no_turn.set()
            self.proactive.turn_finished(turn)
        if next_turn_follows:
            return
        self.media.dialog_ended()
        if then_play is not None:
            self.media.start(then_play)
        self.set_state(TurnState.IDLE)
        if self._renew_session_if_due is not None:
            self._renew_session_if_due()
        self.proactive.consider()

    def interrupt(self, by: CutBy = CutBy.BUTTON) -> None:
        """Barge-in: silence now, cancel the reply, truncate to what was heard; ``by``
        says what cut it (the journal, ``huxleyctl watch``)."""
        self.set_state(TurnState.INTERRUPTED)
        self._replies.interrupt(by)
        if self._barrier is not None:
            self._barrier.cancel()
            self._barrier = None
        if self.turn is not None:
            self.finish_turn(TurnOutcome.INTERRUPTED, next_turn_follows=True)

    def begin_turn(self, source: TurnSource) -> None:
        if self.turn is not None:
            self.finish_turn(TurnOutcome.INTERRUPTED, next_turn_follows=True)
        self.refresh_instructions()
        self._replies.new_turn()
        self.turn = TurnRecord(source=source)
        self._no_turn.clear()
        self._news.publish(TurnBegan(self.turn.turn_id, source))

    def refresh_instructions(self) -> None:
        """Collect the skills' context now; the provider hears of it only if it changed."""
        if self._session_instructions is not None:
            self._instructions = self._session_instructions.refresh()

    def _busy(self) -> bool:
        return self.state.replying or self._replies.busy

    def _idle_activity(self) -> Activity:
        if self.media.playing:
            return Activity.MEDIA
        return Activity.MUTED if self._mute.muted else Activity.IDLE

    @property
    def reply_heard_now(self) -> bool:
        """No turn runs: a turn ends only once its speech has played out (or was cut)."""
        return self.turn is None

    async def reply_heard(self) -> None:
        """Return once no turn runs and no reply is still on its way to the
        listener (the speech source drained, by its played position: a reply
        arrives faster than it plays). The transport's renewals wait
        for it (:meth:`~huxleyd.providers.transport.ProviderConnection.hold_renewals_until`)."""
        while True:
            await self._no_turn.wait()  # a reply still streaming is not heard yet
            await self._replies.played_out()
            if self.turn is None:
                return
