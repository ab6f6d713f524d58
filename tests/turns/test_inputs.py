"""The user's side of a turn alone: what the button, the wake word and the mute
ask of the turn, through the coordinator's ``InputTurn`` edge, and in which
order (the whole coordinator: test_coordinator.py, test_wake.py, test_mute.py)."""

from __future__ import annotations

from huxleyd.clock import ManualClock
from huxleyd.handsfree.settings import WakeSettings
from huxleyd.skillhost.host import SkillHost
from huxleyd.turns.capture import MicCapture
from huxleyd.turns.inputs import InputMeasure, InputTargets, InputTelling, TurnInputs
from huxleyd.turns.link import Link
from huxleyd.turns.media import MediaRunner
from huxleyd.turns.news import Activity, MuteChanged, TurnNews
from huxleyd.turns.outputs import TurnOutputs
from huxleyd.turns.parts import MicSetup, TurnPorts, TurnSettings
from huxleyd.turns.proactive import Proactive
from huxleyd.turns.state import CutBy, TurnOutcome, TurnRecord, TurnSource, TurnState
from huxleyd.turns.wake import WakeWord
from tests.fakes.turn_ports import (
    RecordingAudio,
    RecordingConversation,
    RecordingProvider,
    RecordingTurn,
    RecordingVolume,
    Spawner,
)
from tests.fakes.turn_rig import EARCONS
from tests.turns.test_wake import RecordingWakePort

MIN_TURN_MS = 150.0


class Turn(RecordingTurn):
    """``InputTurn``: the turn as the test sets it, and each move asked of it."""

    def __init__(self) -> None:
        super().__init__(TurnState.IDLE)
        self._turn = None
        self.replying = False

    def busy(self) -> bool:
        return self.replying

    def interrupt(self, by: CutBy) -> None:
        self.moves.append(("interrupt", by))

    def begin_turn(self, source: TurnSource) -> None:
        self.moves.append(("begin_turn", source))
        self._turn = TurnRecord(source=source)

    def commit(self) -> None:
        self.moves.append(("commit", None))
        self._state = TurnState.COMMITTING

    def idle_activity(self) -> Activity:
        return Activity.IDLE


class Rig:
    """Real parts around :class:`TurnInputs`, the turn a recording fake."""

    def __init__(self, *, wake: WakeWord | None = None, muted: bool = False) -> None:
        self.turn = Turn()
        self.clock = ManualClock(100.0)
        self.provider = RecordingProvider()
        self.audio = RecordingAudio(earcons=EARCONS)
        self.outputs = TurnOutputs(self.audio, EARCONS)
        self.news: list[TurnNews] = []
        self.media = MediaRunner(self.audio, on_natural_end=lambda stream: None)
        self.inputs = TurnInputs(
            self.turn,
            TurnPorts(
                provider=self.provider,
                audio=self.audio,
                volume=RecordingVolume(),
                host=SkillHost([]),
            ),
            targets=InputTargets(
                outputs=self.outputs,
                media=self.media,
                capture=MicCapture(self.audio),
                link=Link(self.outputs, EARCONS),
                proactive=Proactive(RecordingConversation(), spawn=Spawner(), clock=self.clock),
            ),
            telling=InputTelling(publish=self.news.append, earcons=EARCONS),
            measure=InputMeasure(clock=self.clock, settings=TurnSettings(min_turn_ms=MIN_TURN_MS)),
            mic=MicSetup(wake=wake, muted=muted),
        )

    async def __aenter__(self) -> Rig:
        self.media.open()  # the dialog's focus needs the loop
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.media.close()

    def heard(self, ms: float) -> None:
        """The mic path sent ``ms`` of audio of the listening turn."""
        assert self.turn.turn is not None
        self.turn.turn.audio_sent_ms = ms


def wake_word() -> WakeWord:
    return WakeWord(RecordingWakePort(), WakeSettings(model="okay_nabu"), playback_ok=False)


async def test_a_press_opens_the_turn_and_a_release_commits_what_was_said() -> None:
    async with Rig() as rig:
        rig.inputs.press()
        assert rig.turn.moves == [
            ("begin_turn", TurnSource.PTT),
            ("state", TurnState.LISTENING),
        ]
        assert rig.turn.turn is not None and rig.turn.turn.pressed_at == 100.0
        assert rig.provider.names() == ["start_turn"]
        assert rig.audio.earcon_names() == ["listen_start"]
        rig.heard(MIN_TURN_MS)
        rig.clock.advance(1.0)
        rig.inputs.release()
        assert rig.provider.names() == ["start_turn", "end_turn"]  # the input ended
        assert rig.turn.moves[2:] == [("commit", None)]
        assert rig.turn.turn is not None and rig.turn.turn.released_at == 101.0


async def test_a_release_with_too_little_said_is_cleared_not_committed() -> None:
    async with Rig() as rig:
        rig.inputs.press()
        rig.heard(MIN_TURN_MS - 20)
        rig.inputs.release()
        assert rig.provider.names() == ["start_turn", "start_turn"]  # cleared: nothing committed
        assert rig.turn.moves[2:] == [("finish_turn", TurnOutcome.TOO_SHORT)]
        assert rig.audio.earcon_names() == ["listen_start", "too_short"]


async def test_a_press_or_a_wake_word_cuts_a_running_reply_before_the_new_turn() -> None:
    async with Rig(wake=wake_word()) as rig:
        rig.turn.replying = True
        rig.inputs.press()
        assert rig.turn.moves[:2] == [("interrupt", CutBy.BUTTON), ("begin_turn", TurnSource.PTT)]
        rig.turn.finish_turn(TurnOutcome.INTERRUPTED)  # as if the reply had been cut
        rig.turn.moves.clear()
        rig.inputs.wake(rig.clock.monotonic())
        assert rig.turn.moves[:2] == [("interrupt", CutBy.WAKE), ("begin_turn", TurnSource.WAKE)]


async def test_muting_drops_the_listening_turn_and_a_muted_press_opens_none() -> None:
    async with Rig() as rig:
        rig.inputs.press()
        rig.inputs.set_muted(True)
        assert rig.turn.moves[2:] == [("finish_turn", TurnOutcome.MUTED)]
        assert rig.provider.names() == ["start_turn", "start_turn"]  # cleared, never committed
        assert rig.news == [MuteChanged(True)]
        rig.turn.moves.clear()
        rig.inputs.press()
        assert rig.turn.moves == []
        assert rig.outputs.activity is Activity.MUTED


async def test_a_wake_word_heard_after_the_close_opens_no_turn() -> None:
    async with Rig(wake=wake_word()) as rig:
        rig.inputs.close()
        rig.inputs.wake(rig.clock.monotonic())
        assert rig.turn.moves == []
        assert rig.provider.names() == []
