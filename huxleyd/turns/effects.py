"""A turn's tool calls and what their side effects leave behind.

:class:`TurnEffects` runs the calls (through a
:class:`~huxleyd.turns.toolrun.ToolRunner`), gives every call exactly one
output, and sorts each side effect by when it may act, as the Huxley
documentation says:

- CancelMedia acts the moment the tool returns (in a task); SetVolume too,
  but its call is done only once the change is (bounded by
  :data:`VOLUME_ANSWER_S`), so its output can say what really happened
  (:func:`speaker_says`): the skill's own output, plus a ``speaker`` part
  when the level differs from the one asked, was not saved, or is not
  confirmed yet;
- PlaySound waits for the follow-up request, then plays before the model's
  audio (:meth:`TurnEffects.play_sounds`);
- AudioStream (only the last of a turn) and InputClaim are latched until the
  terminal barrier (:meth:`TurnEffects.take_latched`);
- SpeakVerbatim replaces the follow-up narration (:meth:`TurnEffects.send_outputs`
  hands its text back).

It may touch: the provider's ``send_tool_output``, the media runner's
``stop``, the volume control, the engine's earcon player, and tasks made
through ``spawn``. It never changes the turn's state: its owner
(:class:`~huxleyd.turns.replies.Replies`, and the coordinator at the turn's
ends) decides when outputs go out and what follows them. None of the methods
its owner calls await (a SetVolume's change runs in its call's task).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    InputClaim,
    PlaySound,
    SetVolume,
    SpeakVerbatim,
)
from huxleyd.audio.volume import LevelChange
from huxleyd.logs import get_logger
from huxleyd.providers.base import ProviderCommands
from huxleyd.providers.events import ToolCall
from huxleyd.skillhost.host import CANCELLED_OUTPUT, SkillHost, ToolOutcome
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.ports import AudioPort, Spawn, VolumePort
from huxleyd.turns.toolrun import ToolRunner

log = get_logger("huxleyd.turns")

VOLUME_ANSWER_S = 2.0
"""How long a SetVolume call waits for the change and its save before it is
answered anyway: a hung disk must not hold the reply. Past it the model hears
that the change is not confirmed yet; the change goes on in its task."""

SPEAKER_KEY = "speaker"
"""The key under which the daemon adds what a SetVolume really did to the
skill's output (the skill's own keys are left as they are)."""


class TurnEffects:
    """The tool calls of the current turn, their outputs and their latched effects.

    The owner calls :meth:`new_turn` when a turn begins, :meth:`start`
    for each reported call, :meth:`apply` from the ``on_done`` callback it gave,
    :meth:`expect_outputs` when the response that called them ends, then
    :meth:`send_outputs` once :attr:`outputs_ready`; :meth:`answer_all` when a
    reply is cut or fails, :meth:`forget` when the turn ends, and
    :meth:`cancel_running` at shutdown.
    """

    def __init__(
        self,
        *,
        host: SkillHost,
        provider: ProviderCommands,
        audio: AudioPort,
        volume: VolumePort,
        media: MediaRunner,
        spawn: Spawn,
        volume_answer_s: float = VOLUME_ANSWER_S,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._host = host
        self._provider = provider
        self._audio = audio
        self._volume = volume
        self._media = media
        self._spawn = spawn
        self._volume_answer_s = volume_answer_s
        self._sleep = sleep
        """How the SetVolume answer's bound is waited (time is an input)."""
        self._tools = ToolRunner(host, finish=self._finish)
        self._awaiting: tuple[str, ...] = ()
        """Calls of the response that just ended, whose outputs the follow-up needs."""
        self._latched_stream: AudioStream | None = None
        self._latched_claim: InputClaim | None = None
        self._pending_sounds: list[bytes] = []
        self._verbatim: str | None = None

    # ------------------------------------------------------------ calls

    def new_turn(self) -> None:
        """Forget the previous turn's calls; any still owed an output get it first."""
        self.answer_all()
        self._tools.reset()

    def start(self, call: ToolCall, *, on_done: Callable[[ToolOutcome], None]) -> None:
        """Run ``call`` now (``on_done`` hears its outcome); a duplicate id is ignored."""
        self._tools.start(call, on_done=on_done)

    def known(self, call_id: str) -> bool:
        return self._tools.known(call_id)

    def decline(self, call_id: str) -> None:
        """A call of a reply that was cut: it is not run, but still gets an output."""
        self._answer(call_id, CANCELLED_OUTPUT)

    def _answer(self, call_id: str, output: str) -> None:
        """Send ``call_id``'s output unless it already went out (one output per call)."""
        if self._tools.mark_answered(call_id):
            self._provider.send_tool_output(call_id, output)

    # ------------------------------------------------------------ side effects

    def apply(self, outcome: ToolOutcome, *, turn_id: str | None) -> None:
        """A call finished: log it, act on its side effect now or latch it."""
        log.info(
            "tool_called",
            turn=turn_id,
            tool=outcome.tool,
            skill=self._host.skill_of(outcome.tool),
            call_id=outcome.call_id,
            error=outcome.error,
            side_effect=outcome.side_effect.kind if outcome.side_effect else None,
        )
        effect = outcome.side_effect
        if isinstance(effect, CancelMedia):
            self._spawn(self._media.stop(reason="cancel_media"), "cancel-media")
        elif isinstance(effect, SetVolume):
            pass  # it acted in the call itself (_finish), so its output says how
        elif isinstance(effect, PlaySound):
            self._pending_sounds.append(effect.pcm)
        elif isinstance(effect, AudioStream):
            self._latched_stream = effect  # only the last stream of a turn runs
        elif isinstance(effect, InputClaim):
            self._latched_claim = effect
        elif isinstance(effect, SpeakVerbatim):
            self._verbatim = effect.text

    async def _finish(self, outcome: ToolOutcome) -> ToolOutcome:
        """The last step of a call: a SetVolume acts now, and the output the model
        gets says what the speaker really did (:func:`speaker_says`)."""
        effect = outcome.side_effect
        if not isinstance(effect, SetVolume):
            return outcome
        # A task of its own, which asyncio.wait never cancels: a call cancelled
        # meanwhile (a barge-in, the turn's end) answers "cancelled", but the
        # change still completes (and the speaker keeps it).
        change = self._spawn(self._set_volume(effect.level), "set-volume")
        timer = asyncio.ensure_future(self._sleep(self._volume_answer_s))
        try:
            await asyncio.wait((change, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        said: dict[str, Any] | None
        if not change.done():
            log.warning(
                "volume_unconfirmed", requested=effect.level, waited_s=self._volume_answer_s
            )
            said = not_confirmed(effect.level, why="")
        elif change.cancelled():  # the daemon is closing
            said = not_confirmed(effect.level, why="cancelled")
        elif (exc := change.exception()) is not None:  # its owner logs it (task_failed)
            said = not_confirmed(effect.level, why=f"{type(exc).__name__}: {exc}")
        else:
            said = speaker_says(effect.level, change.result())
        if said is None:
            return outcome
        return replace(outcome, output=with_speaker(outcome.output, said))

    async def _set_volume(self, level: float) -> LevelChange:
        # SetVolume carries what the skill gave (Huxley validates nothing):
        # a model's 42.5 is rounded, 140 or -5 clamped, here.
        change = await self._volume.change(max(0, min(100, round(level))))
        log.info("volume_set", requested=level, level=change.level, saved=change.saved)
        return change

    def play_sounds(self) -> None:
        """Play latched PlaySounds; call right after the follow-up request, so they lead."""
        for pcm in self._pending_sounds:
            self._audio.play_earcon(pcm, before_speech=True)
        self._pending_sounds.clear()

    def take_latched(self) -> tuple[AudioStream | None, InputClaim | None]:
        """The stream and claim latched this turn, handed over once (terminal barrier)."""
        stream, self._latched_stream = self._latched_stream, None
        claim, self._latched_claim = self._latched_claim, None
        return stream, claim

    def forget(self) -> None:
        """The turn ended: what is still latched never acts."""
        self._pending_sounds.clear()
        self._latched_stream = None
        self._latched_claim = None
        self._verbatim = None

    # ------------------------------------------------------------ outputs

    def expect_outputs(self, call_ids: tuple[str, ...]) -> None:
        """The response that made these calls ended; the follow-up waits for them."""
        self._awaiting = call_ids

    @property
    def outputs_ready(self) -> bool:
        """Calls are awaited and every one of them has finished."""
        return bool(self._awaiting) and self._tools.done(self._awaiting)

    def send_outputs(self) -> str | None:
        """Send the awaited outputs. Returns SpeakVerbatim's text, if a call left one."""
        for call_id in self._awaiting:
            outcome = self._tools.outcome(call_id)
            assert outcome is not None
            self._answer(call_id, outcome.output)
        self._awaiting = ()
        verbatim, self._verbatim = self._verbatim, None
        return verbatim

    def answer_all(self) -> None:
        """Give every call of this turn still owed an output one: a finished call
        its own (also when its response never ended), a running one ``cancelled``."""
        for outcome in self._tools.unanswered():
            self._answer(outcome.call_id, outcome.output)
        self._awaiting = ()

    def cancel_running(self) -> None:
        """Shutdown: every call still owed an output gets one (running ones ``cancelled``)."""
        self.answer_all()


# ------------------------------------------------------------ what a SetVolume's output says


def speaker_says(asked: object, change: LevelChange) -> dict[str, Any] | None:
    """What the daemon adds to a SetVolume's output under :data:`SPEAKER_KEY`, or
    None when the speaker has just what was asked and keeps it (the output the
    skill gave goes out as it is)."""
    notes: list[str] = []
    if change.level != asked:  # clamped, rounded, or the mixer's nearest step
        notes.append(f"the speaker is at {change.level}, the nearest it can do to {asked}")
    lost = not change.saved and change.restart_level != change.level
    if lost:
        after = (
            "it will not survive a restart"
            if change.restart_level is None
            else f"after a restart it goes back to {change.restart_level}"
        )
        notes.append(f"it is set for now, but could not be saved: {after}")
    if not notes:
        return None
    said: dict[str, Any] = {"volume": change.level}
    if lost:
        said.update(saved=False, why=change.why)
    said["note"] = "; ".join(notes)
    return said


def not_confirmed(asked: object, *, why: str) -> dict[str, Any]:
    """The ``speaker`` part when the change did not answer in time, or failed."""
    if why:
        return {"confirmed": False, "why": why, "note": "setting the volume failed"}
    return {"confirmed": False, "note": f"the volume is still being set to {asked}: not confirmed"}


def with_speaker(output: str, said: dict[str, Any]) -> str:
    """``output`` with ``said`` added under :data:`SPEAKER_KEY`: beside the skill's
    keys when it is a JSON object without one, else the whole output kept under
    ``output`` (text, a list, an object that already has the key)."""
    try:
        body: Any = json.loads(output)
    except ValueError:
        body = output
    if isinstance(body, dict) and SPEAKER_KEY not in body:
        return json.dumps({**body, SPEAKER_KEY: said}, ensure_ascii=False)
    return json.dumps({"output": body, SPEAKER_KEY: said}, ensure_ascii=False)
