"""The user's side of a turn: the button, the wake word, the mute, the mic's frames.

Layer: pure turn logic over ports. :class:`TurnInputs` owns what the user's
hands and voice mean, and the state that says it: the mute
(:class:`~huxleyd.turns.mute.MuteSwitch`: the switch and the button's hold
gesture), the wake word (:class:`~huxleyd.turns.wake.WakeWord`), and the
:class:`~huxleyd.turns.mic_path.MicPath` that sends each mic frame where it
goes (it sees the turn through us, as a
:class:`~huxleyd.turns.mic_path.ListeningTurn`).

A press and a wake word start listening by one path (:meth:`TurnInputs.press`,
:meth:`TurnInputs.wake`): barge-in, the new turn, the "something is wrong"
cue once per new problem, the listen earcon. A release, or the end of
speech, commits the turn or drops it as too short
(:meth:`TurnInputs.end_listening`); a mute drops a turn that listens.
The coordinator's ``press``, ``release``, ``wake`` and ``set_muted`` hand
over to these.

It moves the turn only through the narrow :class:`InputTurn` the
coordinator implements, as :class:`~huxleyd.turns.replies.Replies` (the
model's side) does through ``TurnControl``; nothing here imports the
coordinator. Like it, nothing here awaits on an input path.

It is built from a few named parts, as the coordinator is
(:mod:`huxleyd.turns.parts`): the turn, :class:`~huxleyd.turns.parts.TurnPorts`,
and by keyword :class:`InputTargets` (the coordinator's parts it acts on),
:class:`InputTelling` (whom and with what it tells), :class:`InputMeasure`
(the clock and thresholds it reads) and :class:`~huxleyd.turns.parts.MicSetup`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from huxleyd.audio.types import Earcon
from huxleyd.clock import Clock
from huxleyd.logs import get_logger
from huxleyd.turns.capture import MicCapture
from huxleyd.turns.link import Link
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.mic_path import MicPath
from huxleyd.turns.mute import Gesture, MuteSwitch
from huxleyd.turns.news import Activity, DegradedPress, MuteChanged, TurnNews
from huxleyd.turns.outputs import TurnOutputs
from huxleyd.turns.parts import MicSetup, TurnPorts, TurnSettings
from huxleyd.turns.proactive import Proactive
from huxleyd.turns.state import CutBy, TurnOutcome, TurnRecord, TurnSource, TurnState
from huxleyd.turns.wake import WakeWord

log = get_logger("huxleyd.turns")


class InputTurn(Protocol):
    """The coordinator, as the inputs see it: the turn, how it begins, moves and ends."""

    @property
    def state(self) -> TurnState: ...

    @property
    def turn(self) -> TurnRecord | None: ...

    def busy(self) -> bool:
        """A reply is under way (by the turn's state, or the reply's own)."""

    def interrupt(self, by: CutBy) -> None:
        """Barge-in: silence now, cancel the reply; ``by`` says what cut it."""

    def begin_turn(self, source: TurnSource) -> None:
        """End a turn still running (interrupted), then open one from ``source``."""

    def set_state(self, state: TurnState) -> None:
        """Move the turn to ``state`` (the mic capture and the LEDs follow)."""

    def commit(self) -> None:
        """Ask for the reply to what was said: the turn is ``COMMITTING``."""

    def finish_turn(self, outcome: TurnOutcome) -> None:
        """End the turn with ``outcome`` now."""

    def idle_activity(self) -> Activity:
        """What the device shows when no turn runs (media, muted or idle)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputTargets:
    """What the inputs act on: parts the coordinator owns and shares with them."""

    outputs: TurnOutputs
    """The activity (LEDs) and the earcons a press, a release or a mute plays."""
    media: MediaRunner
    """Told a dialog started: a stream under it ducks or pauses (focus)."""
    capture: MicCapture
    """Told whether the wake word listens (the mic captures while it does)."""
    link: Link
    """Asked whether a turn may start (offline, or not set up: it tells the user)."""
    proactive: Proactive
    """A claim (a call) holds the button and the mic before a turn does."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputTelling:
    """How the inputs tell: the news they publish, and the earcons there are to play."""

    publish: Callable[[TurnNews], None]
    """The coordinator's news (a mute, a press while degraded)."""
    earcons: Mapping[str, bytes]
    """The persona's earcons: the "degraded" cue falls back to "error" when absent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputMeasure:
    """What the inputs read to time a turn: the clock that stamps a press, a
    release and the wake word's frames, and the thresholds a turn is held to."""

    clock: Clock
    settings: TurnSettings
    """Read for ``min_turn_ms``: less audio than that is dropped, not committed."""


class TurnInputs:
    """The button, the wake word and the mute of one coordinator, and its mic path."""

    def __init__(
        self,
        turn: InputTurn,
        ports: TurnPorts,
        *,
        targets: InputTargets,
        telling: InputTelling,
        measure: InputMeasure,
        mic: MicSetup,
    ) -> None:
        self._turn = turn
        self._provider = ports.provider
        self._degraded = ports.degraded
        self._outputs = targets.outputs
        self._media = targets.media
        self._capture = targets.capture
        self._link = targets.link
        self._proactive = targets.proactive
        self._publish = telling.publish
        self._earcons = telling.earcons
        self._clock = measure.clock
        self._min_turn_ms = measure.settings.min_turn_ms
        self._mute = MuteSwitch(muted=mic.muted)
        self._wake = mic.wake
        if mic.wake is not None:
            mic.wake.muted = mic.muted
        self._closed = False
        self._mic = MicPath(
            self,
            audio=ports.audio,
            provider=ports.provider,
            clock=self._clock,
            mute=self._mute,
            wake=mic.wake,
            claim_frame=self._proactive.mic_frame,
        )

    async def run(self) -> None:
        """The mic pump: every captured frame to where it goes (:meth:`MicPath.run`)."""
        await self._mic.run()

    def close(self) -> None:
        """The coordinator closes: a wake word detected from now on is ignored."""
        self._closed = True

    @property
    def muted(self) -> bool:
        return self._mute.muted

    @property
    def wake_word(self) -> WakeWord | None:
        """The wake word when it runs (configured and its detector loaded)."""
        return self._wake

    @property
    def wake_armed(self) -> bool:
        """The wake word's detector listens (configured, loaded, not muted)."""
        return self._wake is not None and self._wake.armed

    def turn_ended(self, turn: TurnRecord) -> None:
        """``turn`` ended: a wake turn's end-of-speech detector starts over."""
        if turn.source is TurnSource.WAKE and self._wake is not None:
            self._wake.turn_over()

    # ------------------------------------------------------------ the button

    def press(self) -> None:
        """The button went down: barge in if needed, then listen."""
        if self._turn.state is TurnState.LISTENING:
            turn = self._turn.turn
            if turn is not None and turn.source is TurnSource.WAKE:
                # The button wins: the turn the wake word opened now ends at release.
                turn.source = TurnSource.PTT
                self._mute.pressed(self._clock.monotonic())
                if self._wake is not None:
                    self._wake.turn_over()
            return
        now = self._clock.monotonic()
        if self._mute.muted:
            self._mute.pressed(now)  # a hold may unmute
            self._outputs.show(Activity.MUTED)  # the mic is closed: no turn
            return
        if self._listen(TurnSource.PTT, now):
            self._mute.pressed(now)  # only a turn's hold can be the mute gesture

    def release(self) -> None:
        """The button came up (or was held too long): commit, or drop a too-short press."""
        gesture = self._mute.released(self._clock.monotonic())
        if gesture is Gesture.UNMUTE:
            self.set_muted(False)
            return
        if gesture is Gesture.REMIND:
            self._outputs.earcon(Earcon.ERROR, before_speech=False)
            return
        if gesture is Gesture.MUTE:  # a long silent hold
            self.set_muted(True)
            return
        turn = self._turn.turn
        if turn is not None and turn.source is TurnSource.WAKE:
            return  # not the button's turn: the end-of-speech detector ends it
        self.end_listening()

    def set_muted(self, muted: bool) -> None:
        """Close (or reopen) the microphone at the source: no wake word, no new
        turn from the button, the ``muted`` LEDs; a turn listening now is dropped."""
        if muted is self._mute.muted:
            return
        self._mute.muted = muted
        if self._wake is not None:
            self._wake.muted = muted
        log.info("mic_muted" if muted else "mic_unmuted")
        if muted and self._turn.state is TurnState.LISTENING:
            self._drop(TurnOutcome.MUTED)
        self._capture.wake_armed(self.wake_armed)
        cue = Earcon.LISTEN_STOP if muted else Earcon.LISTEN_START
        self._outputs.earcon(cue, before_speech=False)
        if self._turn.state is TurnState.IDLE:
            self._outputs.show(self._turn.idle_activity())
        self._publish(MuteChanged(muted))

    # ------------------------------------------------------------ the wake word

    def wake(self, heard_at: float) -> None:
        """The wake word ended at ``heard_at`` (the mic clock): a turn starts exactly
        as a press starts one (barge-in, earcon, LEDs), with source ``wake``; the
        frames the detector heard after ``heard_at`` go to the provider first."""
        wake = self._wake
        if wake is None or not wake.armed or self._closed or self.listening:
            return  # the button is held (it wins), or the detection came too late
        if self._proactive.claims.active is not None:
            return  # a call holds the mic: only the button hangs up
        if not self._listen(TurnSource.WAKE, heard_at):
            wake.turn_over()
            return
        log.info("wake_word", model=wake.settings.model)
        for frame in wake.detected(heard_at):
            self._mic.send(frame)

    # ------------------------------------------------------------ listening

    def _listen(self, source: TurnSource, at: float) -> bool:
        """Start listening for a turn from ``source`` at ``at``: the one path of a
        press and a wake word. False when refused (a claim, offline, not set up)."""
        if self._proactive.press():
            return False  # on a claim, the button hangs up
        if self._link.refuse_turn():
            return False  # offline, or not set up: the user was told
        if self._turn.busy():
            self._turn.interrupt(CutBy.WAKE if source is TurnSource.WAKE else CutBy.BUTTON)
        self._turn.begin_turn(source)
        turn = self._turn.turn
        assert turn is not None
        turn.pressed_at = at
        self._media.dialog_started()
        self._provider.start_turn()
        self._cue_degraded()
        self._outputs.earcon(Earcon.LISTEN_START, before_speech=False)
        self._turn.set_state(TurnState.LISTENING)  # the mic capture follows
        return True

    def _cue_degraded(self) -> None:
        """ "Something is wrong" once per new problem (the turn goes on: the rest works)."""
        unheard = self._degraded.take_unheard() if self._degraded is not None else []
        if not unheard:
            return
        log.warning("press_while_degraded", problems=" | ".join(p.line() for p in unheard))
        cue = Earcon.DEGRADED if Earcon.DEGRADED in self._earcons else Earcon.ERROR
        self._outputs.earcon(cue, before_speech=False)
        self._publish(DegradedPress(tuple(unheard)))

    def end_listening(self) -> None:
        """The user finished (release, or the end of speech): commit or drop as too short."""
        turn = self._turn.turn
        if self._turn.state is not TurnState.LISTENING or turn is None:
            return
        turn.released_at = self._clock.monotonic()
        if turn.audio_sent_ms < self._min_turn_ms:
            self._provider.start_turn()  # clear what was sent; nothing is committed
            self._outputs.earcon(Earcon.TOO_SHORT, before_speech=False)
            self._turn.finish_turn(TurnOutcome.TOO_SHORT)
            return
        self._provider.end_turn()
        self._turn.commit()

    def _drop(self, outcome: TurnOutcome) -> None:
        self._provider.start_turn()  # clear what was sent; nothing is committed
        self._turn.finish_turn(outcome)

    # ------------------------------------------------------------ ListeningTurn (the mic path)

    @property
    def listening(self) -> bool:
        return self._turn.state is TurnState.LISTENING

    def listening_turn(self) -> TurnRecord | None:
        return self._turn.turn if self.listening else None

    def speaker_busy(self) -> bool:
        return self._turn.busy() or self._media.playing

    def drop_silent_turn(self) -> None:
        self._drop(TurnOutcome.TOO_SHORT)
