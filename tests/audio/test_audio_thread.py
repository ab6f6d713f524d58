"""The audio thread built from its named parts, without the engine: each part is
used for what its name says (the mic side for the mic, the speaker side for the
speaker, each reporter for its own event)."""

from __future__ import annotations

import asyncio
from typing import Any

from huxleyd.audio.audio_thread import AudioThread
from huxleyd.audio.backends.base import AudioBackend, IoStatus
from huxleyd.audio.dsp import KERNEL
from huxleyd.audio.levels import LevelMeter
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.pacing import ScaledClock
from huxleyd.audio.playout import PlayoutClock
from huxleyd.audio.ring import AsyncWaker, FrameRing, SampleRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.source import PlaybackSource
from huxleyd.audio.thread_parts import MicSide, Platform, Reporters, SpeakerSide
from huxleyd.audio.types import SOURCES, DeviceState, MicFrame
from huxleyd.clock import Clock, ManualClock
from huxleyd.pcm import RATE_HZ, Int16Array, period_frames
from tests.audio.signals import tone
from tests.fakes.audio_backends import FlakyBackend

SETTINGS = AudioSettings(reopen_interval_s=0.1)
N = period_frames(RATE_HZ, SETTINGS.period_ms)


class Events:
    """What each reporter was handed, by reporter."""

    def __init__(self) -> None:
        self.states: list[DeviceState] = []
        self.faults: list[BaseException] = []
        self.crashes: list[BaseException] = []
        self.crashed = asyncio.Event()

    def reporters(self) -> Reporters:
        def crash(exc: Any) -> None:
            self.crashes.append(exc)
            self.crashed.set()

        return Reporters(on_state=self.states.append, on_fault=self.faults.append, on_crash=crash)


def build(
    backend: AudioBackend, clock: Clock, events: Events, *, capture_rate_hz: int = RATE_HZ
) -> tuple[AudioThread, SpeakerSide, MicSide]:
    rings = {name: SampleRing(RATE_HZ, name=name) for name in SOURCES}
    mixer = Mixer(rings, period_samples=N, rate_hz=RATE_HZ, kernel=KERNEL)
    period_s = SETTINGS.period_ms / 1000.0
    speaker = SpeakerSide(
        mixer=mixer,
        playout=PlayoutClock([mixer.channels[name] for name in SOURCES], period_samples=N),
        sources={
            name: PlaybackSource(mixer.channels[name], is_closed=lambda: False) for name in SOURCES
        },
        meter=LevelMeter(period_s),
    )
    mic = MicSide(
        capture=FrameRing(16, N),
        waker=AsyncWaker(),
        rate_hz=capture_rate_hz,
        meter=LevelMeter(period_s),
    )
    thread = AudioThread(
        Platform(backend=backend, kernel=KERNEL, idle_path=True),
        settings=SETTINGS,
        clock=clock,
        speaker=speaker,
        mic=mic,
        reporters=events.reporters(),
    )
    return thread, speaker, mic


def test_the_mic_side_takes_the_mic_and_the_speaker_side_the_speaker() -> None:
    backend = FlakyBackend(keep_speaker=True)
    backend.feed_mic(tone(440, 0.2, -6))
    thread, speaker, mic = build(backend, ManualClock(), Events(), capture_rate_hz=16_000)
    thread.open_device()
    for _ in range(5):
        thread.cycle()
    assert mic.meter.peak_dbfs > -7.0  # the mic's tone, on the mic side's meter
    assert speaker.meter.peak == 0.0  # nothing was played
    frames: list[MicFrame] = []
    while (frame := mic.capture.pop()) is not None:
        frames.append(frame)
    assert len(frames) == 5 and {f.rate_hz for f in frames} == {16_000}
    assert speaker.playout.periods == 5
    thread.stop(1.0)


async def test_each_event_goes_to_the_reporter_of_its_name() -> None:
    class Crash(BaseException):
        """What nothing in the thread catches but its outermost handler."""

    class Backend(FlakyBackend):
        def read(self, out: Int16Array) -> IoStatus:
            if self.reads == 6:  # after the fault at read 2 and the reopen
                raise Crash("the thread's end")
            return super().read(out)

    events = Events()
    thread, _, _ = build(Backend(explode_at_read=2), ScaledClock(20.0), events)
    thread.loop = asyncio.get_running_loop()
    thread.open_device()
    thread.start()
    await asyncio.wait_for(events.crashed.wait(), timeout=30)
    assert thread.stop(5.0)
    assert [repr(e) for e in events.faults] == [repr(RuntimeError("backend bug"))]
    assert [type(e) for e in events.crashes] == [Crash] and thread.crash is events.crashes[0]
    assert events.states[:4] == [
        DeviceState.OPEN,
        DeviceState.LOST,
        DeviceState.REOPENING,
        DeviceState.OPEN,
    ]
