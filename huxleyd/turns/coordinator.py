"""The turn coordinator: one state machine between the button, the model,
the skills and the speaker.

Every input is a plain method called on the event loop (the button's
``pump`` task calls :meth:`Coordinator.press` and :meth:`Coordinator.release`;
the session calls :meth:`Coordinator.on_provider_event` and
:meth:`Coordinator.on_connection_status`); none of them awaits, so inputs never
interleave and state changes never race. Slow work (tools, media, volume,
waiting for speech to play out) runs in tasks whose completion calls back
into a method.

The coordinator owns the turn, whole, in this one class: its
:class:`~huxleyd.turns.state.TurnState` and
:class:`~huxleyd.turns.state.TurnRecord`, how it begins
(:meth:`Coordinator.begin_turn`), moves (:meth:`Coordinator.set_state`: the
mic capture and the LED activity follow) and ends
(:meth:`Coordinator.finish_turn`, :meth:`Coordinator.interrupt` on
barge-in, :meth:`Coordinator.commit` when the reply is asked for); and the
inputs that start and steer turns: text turns, the connection, a stream's
natural end, the button, the wake word and the mute (through
:class:`~huxleyd.turns.inputs.TurnInputs`), injects and claims (through
:class:`~huxleyd.turns.proactive.Proactive`).
It is built from a few named parts (:mod:`huxleyd.turns.parts`). What it
decides is published as typed events (:mod:`huxleyd.turns.news`,
:meth:`Coordinator.subscribe`). The rest goes to parts it owns, each with
its own state and a narrow edge back:

- :class:`~huxleyd.turns.replies.Replies`, the model's side: provider events,
  speech, tool calls and their side effects, follow-ups, silent retries and
  stale replies. It moves the turn only through :meth:`Coordinator.set_state`,
  :meth:`Coordinator.after_speech` and :meth:`Coordinator.finish_turn`.
- :class:`~huxleyd.turns.inputs.TurnInputs`, the user's side: the button
  and its mute gesture, the wake word, the mute, and the
  :class:`~huxleyd.turns.mic_path.MicPath` (where each mic frame goes: a
  claim, the wake word, the provider). It starts, commits and drops the
  listening turn only through the edge ``InputTurn`` (``begin_turn``,
  ``set_state``, ``commit``, ``finish_turn``, ``interrupt``); the
  coordinator's ``press``, ``release``, ``wake`` and ``set_muted`` hand over to it.
- :class:`~huxleyd.turns.barrier.TurnBarrier`: the end of a reply (what
  arrived plays out, then the turn ends once: with its latched stream or
  claim, or with the one cue of a turn that lost something).
- :class:`~huxleyd.turns.outputs.TurnOutputs`: the activity (published, the
  LEDs and systemd's status line follow it), earcons, the turn journal.
- :class:`~huxleyd.turns.capture.MicCapture`: the mic capture switch (on
  while the user listens or a claim holds the mic); ``set_state`` and the
  claim's start and end report to it, nothing else switches capture.
- :class:`~huxleyd.turns.media.MediaRunner`: long-form audio under focus.
- :class:`~huxleyd.turns.link.Link`: the connection as the turn layer sees
  it, and the cues that say it.

Everything branches on the provider's
:class:`~huxleyd.providers.base.Capabilities`, never on a provider's name.
Side effects follow the Huxley documentation: PlaySound plays right after
the follow-up request, before the model's audio; CancelMedia and SetVolume
act when the tool returns; AudioStream (the last one of a turn) starts at
the terminal barrier, once the model's speech has played out. Every tool
call gets an output, including interrupted ones.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from huxley_sdk import AudioStream
from huxleyd.audio.types import Earcon
from huxleyd.bus import Bus
from huxleyd.logs import get_logger
from huxleyd.pcm import ms_to_bytes
from huxleyd.providers.base import (
    ConnectionState,
    ConnectionStatus,
    EndReason,
)
from huxleyd.providers.events import Event
from huxleyd.skillhost.host import ToolOutcome
from huxleyd.turns.barrier import TurnBarrier
from huxleyd.turns.capture import MicCapture
from huxleyd.turns.cues import failure_cue
from huxleyd.turns.effects import TurnEffects
from huxleyd.turns.inputs import InputMeasure, InputTargets, InputTelling, TurnInputs
from huxleyd.turns.link import Link
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.news import (
    Activity,
    ConnectionChanged,
    ToolFinished,
    TurnBegan,
    TurnNews,
)
from huxleyd.turns.outputs import TurnOutputs
from huxleyd.turns.parts import MicSetup, TurnPersona, TurnPorts, TurnSettings, TurnTiming
from huxleyd.turns.proactive import Proactive
from huxleyd.turns.replies import Replies
from huxleyd.turns.reply_tracker import READ_VERBATIM, ReplyTracker
from huxleyd.turns.speech import SpeechOutput
from huxleyd.turns.state import CutBy, TurnOutcome, TurnRecord, TurnSource, TurnState
from huxleyd.turns.wake import WakeWord
from huxleyd.turns.watchdog import SilenceWatchdog

log = get_logger("huxleyd.turns")

__all__ = [
    "READ_VERBATIM",
    "Activity",
    "Coordinator",
    "MicSetup",
    "TurnPersona",
    "TurnPorts",
    "TurnSettings",
    "TurnTiming",
]


class Coordinator:
    """Drives turns. Create, then ``await start()``; ``await close()`` at shutdown."""

    # longer than 50 lines: builds each part once, in the order they need each other
    def __init__(
        self,
        ports: TurnPorts,
        *,
        persona: TurnPersona | None = None,
        settings: TurnSettings | None = None,
        timing: TurnTiming | None = None,
        mic: MicSetup | None = None,
    ) -> None:
        persona, mic = persona or TurnPersona(), mic or MicSetup()
        timing = timing or TurnTiming()
        self._provider = ports.provider
        self._audio = ports.audio
        self._renew_session_if_due = ports.renew_session_if_due
        self._news: Bus[TurnNews] = Bus(log, failed="turn_news_handler_failed")
        """What the coordinator tells the rest of the daemon (:meth:`subscribe`)."""
        self._earcons = dict(persona.earcons)  # the outputs play from this very dict
        self._instructions = persona.instructions
        self._session_instructions = persona.session_instructions
        self._settings = settings or TurnSettings()
        self._clock = timing.clock

        self.state = TurnState.IDLE
        self.turn: TurnRecord | None = None
        self.last_turn: TurnRecord | None = None
        self._no_turn = asyncio.Event()
        """Set while no turn runs (``turn`` is None)."""
        self._no_turn.set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._mic_pump: asyncio.Task[None] | None = None
        self._closed = False

        self._outputs = TurnOutputs(ports.audio, self._earcons, publish=self._news.publish)
        self.media = MediaRunner(
            ports.audio,
            on_natural_end=self._on_media_end,
            on_failed=self._on_media_failed,
            sleep=timing.sleep,
        )
        self._capture = MicCapture(ports.audio)
        self._replies = self._make_replies(ports, timing.sleep)
        self._link = Link(self._outputs, self._earcons)
        self.proactive = Proactive(self, spawn=self._spawn, clock=self._clock, sleep=timing.sleep)
        self._barrier = TurnBarrier(
            self,
            replies=self._replies,
            outputs=self._outputs,
            start_claim=self.proactive.start_claim,
        )
        self._inputs = TurnInputs(
            self,
            ports,
            targets=InputTargets(
                outputs=self._outputs,
                media=self.media,
                capture=self._capture,
                link=self._link,
                proactive=self.proactive,
            ),
            telling=InputTelling(publish=self._news.publish, earcons=self._earcons),
            measure=InputMeasure(clock=self._clock, settings=self._settings),
            mic=mic,
        )

    def _make_replies(self, ports: TurnPorts, sleep: Callable[[float], Awaitable[None]]) -> Replies:
        """The model's side of each turn, over the ports; it moves the turn through us."""
        return Replies(
            turn=self,
            provider=ports.provider,
            outputs=self._outputs,
            speech=SpeechOutput(ports.audio),
            effects=TurnEffects(
                host=ports.host,
                provider=ports.provider,
                audio=ports.audio,
                volume=ports.volume,
                media=self.media,
                spawn=self._spawn,
            ),
            tracker=ReplyTracker(ports.provider, instructions=self._instructions),
            watchdog=SilenceWatchdog(
                self._settings.silent_response_timeout_s, clock=self._clock, sleep=sleep
            ),
            max_silent_retries=self._settings.max_silent_retries,
            clock=self._clock,
            before_follow_up=self.refresh_instructions,
        )

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.media.open()
        self._audio.set_capture_rate(self._provider.capabilities.input_rate_hz)
        self._capture.wake_armed(self._inputs.wake_armed)
        self._capture.start()  # off until someone listens (or the wake word is armed)
        if self._inputs.muted:
            self._outputs.show(Activity.MUTED)
        self._replies.start()
        self._mic_pump = asyncio.get_running_loop().create_task(self._inputs.run(), name="mic-pump")

    async def close(self) -> None:
        """Stop media (its bookmark is written), end a claim, cancel tools and helpers.

        Provider events and connection states that arrive afterwards (the
        runtime closes the connection after us) are ignored."""
        self._closed = True
        self._inputs.close()
        await self.media.close()
        await self.proactive.close()
        self._replies.cancel()
        await self._barrier.close()
        for task in [self._mic_pump, *self._tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._replies.close()

    def subscribe(self, handler: Callable[[TurnNews], None]) -> Callable[[], None]:
        """Hand ``handler`` every :mod:`~huxleyd.turns.news` event from now on, on
        the loop, synchronously (it must not block). Returns the unsubscribe."""
        return self._news.subscribe(handler)

    def tool_finished(self, outcome: ToolOutcome) -> None:
        """The skill host's ``on_outcome``: every tool call's outcome, published."""
        self._news.publish(ToolFinished(outcome))

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` as a task the coordinator cancels at close."""
        return self._spawn(coro, name)

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task_failed", task=task.get_name(), error=repr(task.exception()))

    # ------------------------------------------------------------ the turn

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
            self._outputs.show(self.idle_activity())

    def begin_turn(self, source: TurnSource) -> None:
        """End a turn still running (interrupted), refresh the instructions, and
        publish :class:`~huxleyd.turns.news.TurnBegan`."""
        if self.turn is not None:
            self.finish_turn(TurnOutcome.INTERRUPTED, next_turn_follows=True)
        self.refresh_instructions()
        self._replies.new_turn()
        self.turn = TurnRecord(source=source)
        self._no_turn.clear()
        self._news.publish(TurnBegan(self.turn.turn_id, source))

    def commit(self, *, instructions: str | None = None) -> None:
        """Ask for the reply (``instructions`` for it only): the turn is ``COMMITTING``."""
        self._replies.request(instructions=instructions)
        if self.turn is not None:
            self.turn.committed_at = self._clock.monotonic()
        self.set_state(TurnState.COMMITTING)

    def after_speech(self, outcome: TurnOutcome, *, terminal: bool = False) -> None:
        """The terminal barrier: let the speech play out, then start latched media."""
        self._barrier.after_speech(outcome, terminal=terminal)

    def fail(self, cue: Earcon = Earcon.ERROR) -> None:
        """The turn lost something: what arrived plays out, then one cue (``cue``),
        then ``failed`` (:meth:`~huxleyd.turns.barrier.TurnBarrier.fail`)."""
        self._barrier.fail(cue)

    @property
    def failing(self) -> bool:
        """The turn lost something and plays out what arrived before its cue."""
        return self._barrier.failing

    def finish_turn(
        self,
        outcome: TurnOutcome,
        *,
        next_turn_follows: bool = False,
        then_play: AudioStream | None = None,
    ) -> None:
        """End the turn: the journal line, media back, a renewal if due, the injects
        that waited. ``next_turn_follows``: keep media in the background (no blip).

        ``then_play`` starts after dialog gives the speaker back, so the new
        stream does not arrive preempted (and, with patience 0, evicted).
        """
        turn = self.turn
        self._replies.end_turn()
        if turn is not None:
            self._inputs.turn_ended(turn)
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
        self._barrier.cancel()
        if self.turn is not None:
            self.finish_turn(TurnOutcome.INTERRUPTED, next_turn_follows=True)

    def refresh_instructions(self) -> None:
        """Collect the skills' context now; the provider hears of it only if it changed."""
        if self._session_instructions is not None:
            self._instructions = self._session_instructions.refresh()

    def busy(self) -> bool:
        """A reply is under way (by the turn's state, or the reply's own)."""
        return self.state.replying or self._replies.busy

    def idle_activity(self) -> Activity:
        """What the device shows when no turn runs (media, muted or idle)."""
        if self.media.playing:
            return Activity.MEDIA
        return Activity.MUTED if self._inputs.muted else Activity.IDLE

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

    # ------------------------------------------------------------ inputs: the button, the wake word
    # Read and acted on by self._inputs (TurnInputs, the user's side); these hand over.

    def press(self) -> None:
        """The button went down: barge in if needed, then listen."""
        self._inputs.press()

    def release(self) -> None:
        """The button came up (or was held too long): commit, or drop a too-short press."""
        self._inputs.release()

    def wake(self, heard_at: float) -> None:
        """The wake word ended at ``heard_at`` (the mic clock): a turn starts as a press's."""
        self._inputs.wake(heard_at)

    def set_muted(self, muted: bool) -> None:
        """Close (or reopen) the microphone at the source; a turn listening now is dropped."""
        self._inputs.set_muted(muted)

    @property
    def muted(self) -> bool:
        return self._inputs.muted

    @property
    def wake_word(self) -> WakeWord | None:
        """The wake word when it runs (configured and its detector loaded)."""
        return self._inputs.wake_word

    # ------------------------------------------------------------ inputs: text, media

    def say(self, text: str) -> str:
        """A text turn (``huxleyctl say``): as if the user had said ``text``."""
        if self.state is TurnState.LISTENING:
            self._provider.start_turn()
        if self.busy() or self.state is TurnState.LISTENING:
            self.interrupt(CutBy.SAY)
        self.begin_turn(TurnSource.TEXT)
        assert self.turn is not None
        self.media.dialog_started()
        self._provider.send_user_text(text)
        self.commit()
        return self.turn.turn_id

    async def stop_media(self) -> bool:
        return await self.media.stop(reason="stop_command")

    @property
    def listening(self) -> bool:
        return self.state is TurnState.LISTENING

    @property
    def turn_active(self) -> bool:
        return self.turn is not None

    @property
    def content_in_foreground(self) -> bool:
        """A stream plays and nothing ducks or pauses it (the inject rule waits for it)."""
        return self.media.playing and not self.media.in_background

    def _on_media_failed(self, stream: AudioStream) -> None:
        """A stream broke (its skill raised): the error cue, and no longer "media"."""
        self._outputs.earcon(Earcon.ERROR, before_speech=False)
        if self.state is TurnState.IDLE:
            self._outputs.show(Activity.IDLE)
        self.proactive.consider()

    def _on_media_end(self, stream: AudioStream) -> None:
        if self.state is TurnState.IDLE:
            self._outputs.show(Activity.IDLE)
        if not (stream.on_complete_prompt and self.state is TurnState.IDLE):
            self.proactive.consider()
            return
        if stream.on_complete_prompt:
            self.begin_turn(TurnSource.MEDIA)
            self.commit(instructions=f"{self._instructions}\n\n{stream.on_complete_prompt}".strip())
            if stream.completion_silence_ms > 0:
                silence = bytes(ms_to_bytes(stream.completion_silence_ms))
                self._spawn(self._audio.source("content").write(silence), "completion-silence")

    # ------------------------------------------------------------ proactive turns and claims
    # ctx.inject_turn / start_input_claim go to self.proactive; it calls these.

    def begin_inject(self, inject_id: str, prompt: str) -> None:
        """Speak a proactive announcement now (the inject rule said it may)."""
        self.begin_turn(TurnSource.INJECT)
        assert self.turn is not None
        self.turn.inject_id = inject_id
        self.media.dialog_started()
        self._outputs.earcon(Earcon.TIMER, before_speech=True)
        self.commit(instructions=f"{self._instructions}\n\n{prompt}".strip())

    def suspend_for_claim(self) -> None:
        """A claim takes the mic: stop any reply, clear the input, background the media."""
        if self.busy() or self.state is TurnState.LISTENING:
            self.interrupt(CutBy.CALL)
            self.media.dialog_ended()
            self.set_state(TurnState.IDLE)
        self._provider.start_turn()  # input_audio_buffer.clear; no appends while claimed
        self._capture.claimed(True)  # the skill hears the mic now
        self.media.claim_started()
        self._outputs.show(Activity.CALL)

    def resume_after_claim(self) -> None:
        self._capture.claimed(False)
        self.media.claim_ended()
        self._outputs.show(self.idle_activity())

    async def comms_write(self, pcm: bytes) -> None:
        await self._audio.source("comms").write(pcm)

    # ------------------------------------------------------------ inputs: the provider

    def on_provider_event(self, event: Event) -> None:
        """The transport's ``on_event`` callback."""
        if self._closed:
            return
        self._replies.on_event(event)

    def on_connection_status(self, status: ConnectionStatus) -> None:
        """The session's ``on_state``: published first (the LEDs, status and
        ``watch`` see the state before what the coordinator does about it),
        then acted on by :meth:`on_connection` (not once closed: the session's
        last report, ``closed``, is still published)."""
        self._news.publish(ConnectionChanged(status))
        self.on_connection(status.state, status.attempt, status.ended)

    def on_connection(
        self, state: ConnectionState, attempt: int = 0, ended: EndReason | None = None
    ) -> None:
        """The transport's connection state (``connected``, ``offline``…).

        Leaving ``connected`` ends a reply in progress: a response that was
        requested but never started gets no event from the dead socket. What
        of it had arrived still plays to its last sample, then the turn's one
        error cue (:meth:`fail`). A reply the provider had finished sending
        (the terminal barrier plays it out) is not touched: the listener hears
        all of it, and the turn ends with its own outcome.
        """
        if self._closed:
            return
        self._link.track(state)
        lost = self.failing  # already lost (an error event came first)
        if state is not ConnectionState.CONNECTED and self.state.replying and not lost:
            if self.state is TurnState.APPLYING_SIDE_EFFECTS:
                log.info("turn_outlives_connection", state=state)
            else:
                log.warning("turn_lost_with_connection", state=state)
                self._replies.lose()
                self.fail()  # what arrived plays out, then one error cue
                lost = True
        if lost and state is ConnectionState.FAILED:
            # Ended for good: the lost turn's one cue is the failure's own.
            self.fail(failure_cue(ended, self._earcons))
        self._link.announce(state, attempt, ended, turn_lost=lost)
        if state is ConnectionState.CONNECTED and self.activity == Activity.OFFLINE:
            self._outputs.show(self.idle_activity())
        if state is ConnectionState.CONNECTED:
            self.proactive.consider()  # injects held while there was nobody to ask

    @property
    def offline(self) -> bool:
        return self._link.offline

    @property
    def key_refused(self) -> bool:
        """The provider refused the API key (the connection retries slowly)."""
        return self._link.key_refused

    @property
    def dropped_late_chunks(self) -> int:
        """Audio chunks of cancelled responses that arrived after the cut (never played)."""
        return self._replies.dropped_late_chunks

    @property
    def reply_audio_received_bytes(self) -> int:
        """Reply audio that arrived and went to the speaker, since the start (a
        turn that loses its connection must still play all of it)."""
        return self._replies.audio_received_bytes

    @property
    def activity(self) -> Activity:
        """What the device is doing (an :class:`Activity`), for the LEDs and ``status``."""
        return self._outputs.activity

    @property
    def provider_connected(self) -> bool:
        """Whether a request sent now reaches the provider (frames sent while
        disconnected are dropped). Providers without the notion count as connected."""
        return self._provider.connected
