"""A turn's tool calls and what their side effects leave behind.

:class:`TurnEffects` runs the calls (through a
:class:`~huxleyd.turns.toolrun.ToolRunner`), gives every call exactly one
output, and sorts each side effect by when it may act, as the Huxley
documentation says:

- CancelMedia and SetVolume act the moment the tool returns (in a task);
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
ends) decides when outputs go out and what follows them. None of its methods await.
"""

from __future__ import annotations

from collections.abc import Callable

from huxley_sdk import (
    AudioStream,
    CancelMedia,
    InputClaim,
    PlaySound,
    SetVolume,
    SpeakVerbatim,
)
from huxleyd.logs import get_logger
from huxleyd.providers.base import ProviderCommands
from huxleyd.providers.events import ToolCall
from huxleyd.skillhost.host import CANCELLED_OUTPUT, SkillHost, ToolOutcome
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.ports import AudioPort, Spawn, VolumePort
from huxleyd.turns.toolrun import ToolRunner

log = get_logger("huxleyd.turns")


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
    ) -> None:
        self._host = host
        self._provider = provider
        self._audio = audio
        self._volume = volume
        self._media = media
        self._spawn = spawn
        self._tools = ToolRunner(host)
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
            self._spawn(self._set_volume(effect.level), "set-volume")
        elif isinstance(effect, PlaySound):
            self._pending_sounds.append(effect.pcm)
        elif isinstance(effect, AudioStream):
            self._latched_stream = effect  # only the last stream of a turn runs
        elif isinstance(effect, InputClaim):
            self._latched_claim = effect
        elif isinstance(effect, SpeakVerbatim):
            self._verbatim = effect.text

    async def _set_volume(self, level: float) -> None:
        # SetVolume carries what the skill gave (Huxley validates nothing):
        # a model's 42.5 is rounded, 140 or -5 clamped, here.
        really = await self._volume.set_level(max(0, min(100, round(level))))
        log.info("volume_set", requested=level, level=really)

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
