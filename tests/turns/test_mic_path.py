"""Each mic frame goes to exactly one place: the skill holding the mic, else
the wake word while no turn listens, else the provider (only what came after
the press); a wake turn's frames end it, a button turn's feed the mute hold."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from huxleyd.audio.types import MicFrame
from huxleyd.clock import ManualClock
from huxleyd.handsfree.settings import WakeSettings
from huxleyd.turns.mic_path import MicPath
from huxleyd.turns.mute import MUTE_HOLD_S, Gesture, MuteSwitch
from huxleyd.turns.state import TurnRecord, TurnSource
from huxleyd.turns.wake import WakeWord
from tests.fakes.turn_ports import RecordingAudio, RecordingProvider

RATE_HZ = 24_000
VOICE = b"\x00\x30\x00\xd0" * 240  # a 20 ms square wave, far above any floor
QUIET = bytes(960)
SETTINGS = WakeSettings(model="okay_nabu", end_silence_ms=200, no_speech_s=1.0, max_turn_s=4.0)


def frame(at: float, pcm: bytes = VOICE, seq: int = 0) -> MicFrame:
    return MicFrame(pcm, RATE_HZ, at, seq)


class Turn:
    """The coordinator as the mic path sees it; records what it was asked."""

    def __init__(self) -> None:
        self.record: TurnRecord | None = None
        self.busy = False
        self.asked: list[str] = []

    @property
    def listening(self) -> bool:
        return self.record is not None

    def listening_turn(self) -> TurnRecord | None:
        return self.record

    def speaker_busy(self) -> bool:
        return self.busy

    def end_listening(self) -> None:
        self.asked.append("end_listening")

    def drop_silent_turn(self) -> None:
        self.asked.append("drop_silent_turn")


class WakePort:
    """The detector: any frame is a detection at its first sample, and starts a
    wake turn at once (the coordinator replays such a frame itself, through
    ``WakeWord.detected``: the mic path must not send it too)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.heard: list[bytes] = []

    def hear(self, pcm: bytes, captured_at: float, end_at: float) -> None:
        self.heard.append(pcm)
        self.turn.record = TurnRecord(source=TurnSource.WAKE, pressed_at=captured_at)

    def reset(self) -> None:
        pass

    def deliver_to(self, on_wake: Callable[[float], None]) -> None:
        pass


class Rig:
    def __init__(self, *, wake: bool = False, claimed: frozenset[bytes] = frozenset()) -> None:
        self.turn = Turn()
        self.audio = RecordingAudio()
        self.provider = RecordingProvider()
        self.clock = ManualClock(100.0)
        self.mute = MuteSwitch()
        self.port = WakePort(self.turn)
        self.wake = WakeWord(self.port, SETTINGS, playback_ok=False) if wake else None
        self.claimed: list[bytes] = []
        self.claim_took = asyncio.Event()

        async def claim_frame(pcm: bytes) -> bool:
            if pcm in claimed:
                self.claimed.append(pcm)
                self.claim_took.set()
                return True
            return False

        self.path = MicPath(
            self.turn,
            audio=self.audio,
            provider=self.provider,
            clock=self.clock,
            mute=self.mute,
            wake=self.wake,
            claim_frame=claim_frame,
        )

    def sent(self) -> list[int]:
        return [n for name, n in self.provider.commands if name == "append_audio"]


async def test_run_routes_each_frame_to_one_place() -> None:
    claim, heard_by_wake, to_provider = b"\1\0" * 480, b"\2\0" * 480, b"\3\0" * 480
    rig = Rig(wake=True, claimed=frozenset({claim}))
    pump = asyncio.create_task(rig.path.run())
    for seq, pcm in enumerate((claim, heard_by_wake, to_provider)):
        rig.audio.mic.put_nowait(frame(1.0 + seq * 0.02, pcm, seq))
    await rig.provider.wait_until(lambda: rig.provider.appended_bytes > 0, "a frame sent")
    pump.cancel()
    assert rig.claimed == [claim]  # the skill's, and nobody else's
    assert rig.port.heard == [heard_by_wake]  # the detector's only: nothing went out
    assert rig.sent() == [len(to_provider)]  # after the detection: the provider's


async def test_while_the_speaker_plays_the_wake_word_may_not_listen() -> None:
    last = b"\4\0" * 480
    rig = Rig(wake=True, claimed=frozenset({last}))
    rig.turn.busy = True
    pump = asyncio.create_task(rig.path.run())
    for seq, pcm in enumerate((VOICE, VOICE, last)):
        rig.audio.mic.put_nowait(frame(1.0 + seq * 0.02, pcm, seq))
    await rig.claim_took.wait()  # the last frame: the two before it were read
    pump.cancel()
    assert rig.port.heard == [] and rig.sent() == []


def test_only_frames_after_the_press_go_out_and_are_counted() -> None:
    rig = Rig()
    rig.path.send(frame(1.0))
    assert rig.sent() == []  # no turn listens
    rig.turn.record = turn = TurnRecord(pressed_at=2.0)
    rig.path.send(frame(1.97))  # ends at 1.99: before the press
    rig.path.send(frame(1.98))  # ends at exactly 2.0: still before
    assert rig.sent() == [] and turn.first_frame_sent_at is None
    rig.path.send(frame(1.99))  # straddles the press
    rig.clock.advance(0.5)
    rig.path.send(frame(2.01))
    assert rig.sent() == [960, 960]
    assert turn.audio_sent_ms == 40.0
    assert turn.first_frame_sent_at == 100.0  # the first frame's, not the last's


def test_a_turn_without_its_start_sends_nothing() -> None:
    rig = Rig()
    rig.turn.record = TurnRecord(pressed_at=None)
    rig.path.send(frame(5.0))
    assert rig.sent() == []


def test_a_wake_turn_ends_when_the_user_stops_talking() -> None:
    rig = Rig(wake=True)
    assert rig.wake is not None
    rig.wake.detected(0.0)
    rig.turn.record = TurnRecord(source=TurnSource.WAKE, pressed_at=0.0)
    at = 0.0
    for pcm in [VOICE] * 5 + [QUIET] * 9:
        rig.path.send(frame(at, pcm))
        at += 0.02
    assert rig.turn.asked == []
    rig.path.send(frame(at, QUIET))  # 200 ms of silence after speech
    assert rig.turn.asked == ["end_listening"]


def test_a_wake_turn_where_nobody_spoke_is_dropped() -> None:
    rig = Rig(wake=True)
    assert rig.wake is not None
    rig.wake.detected(0.0)
    rig.turn.record = TurnRecord(source=TurnSource.WAKE, pressed_at=0.0)
    for i in range(50):  # one second of silence: no_speech_s
        rig.path.send(frame(0.02 * i, QUIET))
    assert rig.turn.asked == ["drop_silent_turn"]


def test_a_button_turns_frames_tell_the_mute_hold_it_was_talk() -> None:
    for pcm, gesture in ((VOICE, Gesture.NONE), (QUIET, Gesture.MUTE)):
        rig = Rig(wake=True)
        rig.turn.record = TurnRecord(source=TurnSource.PTT, pressed_at=0.0)
        rig.mute.pressed(0.0)
        for i in range(10):
            rig.path.send(frame(0.02 * i, pcm))
        assert rig.mute.released(MUTE_HOLD_S) is gesture
        assert rig.turn.asked == []  # the wake word's end of speech is not a button turn's
