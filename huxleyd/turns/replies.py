"""The model's side of a turn: from asking for a reply to its last word.

The coordinator owns the turn (its state, its record, how it begins and
ends), and the user's side of it through
:class:`~huxleyd.turns.inputs.TurnInputs`. Everything the provider says back goes to
:class:`Replies`: it plays the reply's audio (through
:class:`~huxleyd.turns.speech.SpeechOutput`), runs its tool calls and their
side effects (:class:`~huxleyd.turns.effects.TurnEffects`), asks for the
follow-up once every call has an output (or for the verbatim reader, for
SpeakVerbatim), retries a reply that stays silent, and gives up one that
fails or goes stale. Which provider response is the reply is the
bookkeeping of its :class:`~huxleyd.turns.reply_tracker.ReplyTracker`; the
timer behind "silent" and "stale" is its
:class:`~huxleyd.turns.watchdog.SilenceWatchdog`.

Its parts are built by the owner and handed over built (each of them is
used here, none is only passed through): the speech output, the effects,
the tracker and the watchdog.

It may touch: the provider's ``truncate`` (the rest of what it sends goes
through the tracker and the effects), its parts, the outputs (earcons,
SPEAKING), and the current :class:`~huxleyd.turns.state.TurnRecord`'s
timings, tools and retries. It moves the turn only through the narrow
:class:`TurnControl` the coordinator implements.

Like the coordinator, nothing here awaits on an input path: events are
handled in plain methods, slow work runs in the tasks of the speech writer,
the tool runner and ``spawn``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from huxley_sdk import AudioStream, InputClaim
from huxleyd.audio.types import Earcon
from huxleyd.clock import Clock
from huxleyd.logs import get_logger
from huxleyd.providers.base import ProviderCommands
from huxleyd.providers.events import (
    PROTOCOL_ERROR,
    AudioChunk,
    Event,
    ProviderErrorEvent,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    ToolCall,
)
from huxleyd.skillhost.host import ToolOutcome
from huxleyd.turns.effects import TurnEffects
from huxleyd.turns.outputs import Activity, TurnOutputs
from huxleyd.turns.reply_tracker import ReplyTracker
from huxleyd.turns.speech import SpeechOutput
from huxleyd.turns.state import CutBy, TurnOutcome, TurnRecord, TurnState
from huxleyd.turns.watchdog import SilenceWatchdog

log = get_logger("huxleyd.turns")


class TurnControl(Protocol):
    """The coordinator, as the reply sees it: the turn, its state, how it ends."""

    @property
    def state(self) -> TurnState: ...

    @property
    def turn(self) -> TurnRecord | None: ...

    def set_state(self, state: TurnState) -> None:
        """Move the turn to ``state`` (the LEDs and the mic capture follow)."""

    def after_speech(self, outcome: TurnOutcome, *, terminal: bool = False) -> None:
        """End the turn with ``outcome`` once its speech has played out;
        ``terminal``: then start what its tools latched (a stream, a claim)."""

    def finish_turn(self, outcome: TurnOutcome) -> None:
        """End the turn with ``outcome`` now."""

    def fail(self) -> None:
        """The turn lost something: what arrived plays out, then one error cue,
        then the turn ends ``failed`` (a second call for the same turn is a no-op)."""


class Replies:
    """The model's side of the current turn: its reply, the reply's tool calls, its speech.

    The coordinator calls :meth:`request` to ask, :meth:`on_event` with every
    provider event, :meth:`interrupt` on barge-in, :meth:`lose` when the
    connection drops mid-reply, :meth:`new_turn` / :meth:`end_turn` around
    each turn, :meth:`played_out` and :meth:`take_latched` at the terminal
    barrier; :meth:`start`, then :meth:`cancel` and :meth:`close` at shutdown.
    """

    def __init__(
        self,
        *,
        turn: TurnControl,
        provider: ProviderCommands,
        outputs: TurnOutputs,
        speech: SpeechOutput,
        effects: TurnEffects,
        tracker: ReplyTracker,
        watchdog: SilenceWatchdog,
        max_silent_retries: int,
        clock: Clock,
        before_follow_up: Callable[[], None] | None = None,
    ) -> None:
        self._turn = turn
        self._before_follow_up = before_follow_up
        """Runs before a follow-up is requested: tools may have changed the skills' context."""
        self._provider = provider
        self._outputs = outputs
        self._clock = clock
        self._max_silent_retries = max_silent_retries
        self._speech = speech
        self._effects = effects
        self._tracker = tracker
        self._watchdog = watchdog
        """Armed by each request (expiry: *silent*), re-armed by each chunk and call of
        the reply (expiry: *stale*), disarmed when the reply ends or is dropped."""
        self.dropped_late_chunks = 0
        """Audio chunks of cancelled responses that arrived after the cut (never played)."""
        self.audio_received_bytes = 0
        """Reply audio that arrived and was handed to the speaker, since the start."""
        self._session_lost = False
        """The turn's reply came on a session that is gone (:meth:`lose`)."""

    # ------------------------------------------------------------ for the coordinator

    def start(self) -> None:
        """Start the speech writer (on the running loop)."""
        self._speech.start()

    def cancel(self) -> None:
        """Shutdown, first step: running calls get their cancelled outputs; no timer."""
        self._effects.cancel_running()
        self._watchdog.disarm()

    async def close(self) -> None:
        """Shutdown, last step: stop the speech writer and the watchdog."""
        await self._watchdog.close()
        await self._speech.close()

    def request(self, *, instructions: str | None = None) -> None:
        """Ask for a reply (``instructions`` override the session's for it only)."""
        self._tracker.request(instructions=instructions)
        self._expect_start()

    def _expect_start(self) -> None:
        """A request went out: something must come within the timeout, else retry."""
        self._watchdog.arm(self._on_silent)

    def _expect_more(self) -> None:
        """A chunk or call of the reply arrived: it must go on, or end, within the timeout."""
        self._watchdog.arm(self._on_stale_response)

    def _on_silent(self) -> None:
        self._retry_silent("timeout")

    @property
    def busy(self) -> bool:
        """A reply is running, or its speech is still on its way to the speaker."""
        return self._speech.pending or self._tracker.running

    def new_turn(self) -> None:
        """A turn begins: the previous turn's calls are forgotten."""
        self._session_lost = False
        self._effects.new_turn()

    def end_turn(self) -> None:
        """The turn ended: no timer, no reader awaited, nothing latched acts, and
        nothing of its reply is cancelled or truncated later."""
        self._watchdog.disarm()
        self._tracker.end_turn()
        self._effects.forget()
        if not self._speech.pending:
            self._speech.forget_item()

    def interrupt(self, by: CutBy = CutBy.BUTTON) -> None:
        """Barge-in: silence now, drop the reply, truncate to what was heard, answer every
        call. ``by``: what cut it (the journal's ``barge_in by=``, the watch feed's words)."""
        heard = self._speech.cut()
        self._watchdog.disarm()
        if self._session_lost:
            heard = None  # its session is gone: nothing there to cancel or truncate
        else:
            self._tracker.abandon()
        if heard is not None:
            # With truncate the provider cuts its history; without, the core keeps
            # the record and tells the model what was heard its own way.
            self._provider.truncate(heard.item_id, heard.audio_end_ms)
        turn = self._turn.turn
        if heard is not None and turn is not None:
            log.info(
                "barge_in",
                turn=turn.turn_id,
                item=heard.item_id,
                heard_ms=heard.audio_end_ms,
                by=by.value,
            )
        self._effects.answer_all()

    def lose(self) -> None:
        """The connection dropped mid-reply: no timer, the reply is over (its
        session is gone: nothing to cancel), every call is answered. What
        arrived still plays: the turn's end waits for it (``fail``)."""
        self._session_lost = True
        self._watchdog.disarm()
        self._tracker.end_turn()
        self._effects.answer_all()

    async def played_out(self) -> None:
        """Return once the reply's speech has reached the speaker."""
        await self._speech.played_out()

    def take_latched(self) -> tuple[AudioStream | None, InputClaim | None]:
        """The stream and claim the tools latched, handed over once (terminal barrier)."""
        return self._effects.take_latched()

    # ------------------------------------------------------------ provider events

    def on_event(self, event: Event) -> None:
        """One provider event (events of no concern to the reply are ignored)."""
        if isinstance(event, AudioChunk):
            self._on_audio(event)
        elif isinstance(event, ToolCall):
            self._on_tool_call(event)
        elif isinstance(event, ResponseStarted):
            self._on_response_started(event)
        elif isinstance(event, ResponseDone):
            self._on_response_done(event)
        elif isinstance(event, ProviderErrorEvent):
            self._on_error(event)

    def _on_response_started(self, event: ResponseStarted) -> None:
        state = self._turn.state
        wanted = state in (TurnState.COMMITTING, TurnState.AWAITING_NEXT_RESPONSE)
        if self._tracker.started(event, wanted=wanted):
            self._turn.set_state(TurnState.IN_RESPONSE)

    def _on_audio(self, chunk: AudioChunk) -> None:
        if not self._tracker.owns(chunk.response_id):
            self.dropped_late_chunks += 1
            return
        # A response that started and then goes quiet without response.done
        # is stale: the same timer, re-armed by every chunk, ends it.
        self._expect_more()
        turn = self._turn.turn
        if turn is not None and turn.first_audio_at is None:
            turn.first_audio_at = self._clock.monotonic()
            self._speech.arm_first_heard(lambda: self._first_audio_heard(turn))
        if self._speech.enqueue(chunk.item_id, chunk.pcm):
            self.audio_received_bytes += len(chunk.pcm)
        self._outputs.show(Activity.SPEAKING)

    def _first_audio_heard(self, turn: TurnRecord) -> None:
        """The reply's first sample reached the speaker (``first_audio_to_playing_ms``)."""
        if turn.first_played_at is None:
            turn.first_played_at = self._clock.monotonic()

    def _on_stale_response(self) -> None:
        """Audio stopped mid-response and the response never ended: give it up."""
        turn = self._turn.turn
        log.error(
            "response_stale",
            turn=turn.turn_id if turn else None,
            response=self._tracker.response_id,
        )
        self._watchdog.disarm()
        self._tracker.abandon()
        self._effects.answer_all()
        self._turn.fail()  # the cue after what was already said

    def _on_tool_call(self, call: ToolCall) -> None:
        if self._tracker.gave_up(call.response_id):
            # The reply was cut; the call still needs an output.
            self._effects.decline(call.call_id)
            return
        self._expect_more()  # response.done must follow
        turn = self._turn.turn
        if turn is not None:
            turn.tools.append(call.name)
        self._effects.start(call, on_done=self._on_tool_done)

    def _on_response_done(self, done: ResponseDone) -> None:
        if not self._tracker.finished(done):
            return
        self._watchdog.disarm()
        if done.status in (ResponseStatus.CANCELLED, ResponseStatus.FAILED):
            log.warning("response_failed", status=done.status.value, reason=done.reason)
            self._effects.answer_all()
            self._turn.fail()
            return
        if done.tool_calls:
            for call in done.tool_calls:
                if not self._effects.known(call.call_id):
                    self._on_tool_call(call)  # reported only in response.done
            self._effects.expect_outputs(tuple(c.call_id for c in done.tool_calls))
            self._maybe_follow_up()
            return
        if not done.had_audio:
            self._retry_silent("empty_response")
            return
        self._turn.after_speech(TurnOutcome.ANSWERED, terminal=True)

    def _on_error(self, error: ProviderErrorEvent) -> None:
        # The one journal line per provider error (the protocol cores only
        # report it as an event); a session-ending one is an ERROR. A frame we
        # could not understand is logged by the core that met it, with the
        # frame's type (provider_protocol_error), so not again here.
        if error.code != PROTOCOL_ERROR:
            log.log(
                logging.WARNING if error.recoverable else logging.ERROR,
                "provider_error",
                code=error.code,
                message=error.message,
                client_event=error.client_event_id,
                recoverable=error.recoverable,
            )
        state = self._turn.state
        if error.code == "conversation_already_has_active_response":
            self._tracker.request_refused()  # no start will come for that request
        if error.code == "input_audio_buffer_commit_empty" and state is TurnState.COMMITTING:
            self._watchdog.disarm()
            self._outputs.earcon(Earcon.TOO_SHORT, before_speech=False)
            self._turn.finish_turn(TurnOutcome.TOO_SHORT)
        elif (
            not error.recoverable
            and state.replying
            and state is not TurnState.APPLYING_SIDE_EFFECTS
        ):
            # In APPLYING_SIDE_EFFECTS the reply has all arrived and is playing
            # out (or is already ending as it should): the session's end (a
            # session cap) takes nothing from it, so no error cue and no FAILED.
            self._watchdog.disarm()
            self._effects.answer_all()
            self._turn.fail()

    # ------------------------------------------------------------ follow-ups and retries

    def _on_tool_done(self, outcome: ToolOutcome) -> None:
        turn = self._turn.turn
        self._effects.apply(outcome, turn_id=turn.turn_id if turn else None)
        self._maybe_follow_up()

    def _maybe_follow_up(self) -> None:
        """Once the response is over and all its tools answered: outputs, then a follow-up."""
        if not self._effects.outputs_ready:
            return
        if self._tracker.running:
            return  # the response that called them is still running
        verbatim = self._effects.send_outputs()
        if verbatim is not None:
            stale = self._speech.cut()  # speech still queued is stale
            turn = self._turn.turn
            if stale is not None and turn is not None:
                log.info(
                    "reply_cut",
                    turn=turn.turn_id,
                    item=stale.item_id,
                    heard_ms=stale.audio_end_ms,
                    by=CutBy.VERBATIM.value,
                )
            self._tracker.read_aloud(verbatim)  # instead of a narration: the model stays quiet
        else:
            if self._before_follow_up is not None:
                self._before_follow_up()
            self._tracker.request()
        self._expect_start()
        self._effects.play_sounds()  # after the request, before the model's first audio
        self._turn.set_state(TurnState.AWAITING_NEXT_RESPONSE)

    def _retry_silent(self, why: str) -> None:
        """Nothing came (``timeout``) or the reply was empty: ask again, or give up."""
        turn = self._turn.turn
        if turn is None:
            return
        if turn.retries >= self._max_silent_retries:
            log.error("response_silent", turn=turn.turn_id, why=why, retries=turn.retries)
            self._outputs.earcon(Earcon.ERROR, before_speech=False)
            self._turn.finish_turn(TurnOutcome.SILENT)
            return
        turn.retries += 1
        log.warning("response_retry", turn=turn.turn_id, why=why, attempt=turn.retries)
        self._tracker.abandon(late_start_is_stale=False)
        self._turn.set_state(TurnState.COMMITTING)
        self._tracker.retry()
        self._expect_start()
