"""A playback source is the port the turn layer plays through: every per-source
operation is on it, and acts on that source alone (engine on a WAV backend)."""

from __future__ import annotations

import numpy as np

from huxleyd.audio.backends.base import OutputClock
from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.mixer import Mixer
from huxleyd.audio.ring import SampleRing
from huxleyd.audio.settings import AudioSettings
from huxleyd.audio.source import PlaybackSource
from huxleyd.audio.types import SOURCES
from huxleyd.clock import ManualClock
from huxleyd.turns.ports import SourcePort
from tests.audio.signals import level_at, tone
from tests.fakes.audio_backends import TimedWavBackend

N = 480  # one 20 ms period at 24 kHz


def engine_on(backend: WavBackend) -> AudioEngine:
    return AudioEngine(backend, settings=AudioSettings(backend="wav"), clock=ManualClock())


def test_the_engine_has_no_per_source_operations_left() -> None:
    per_source = {"duck", "unduck", "pause", "resume", "flush", "set_gain", "played_ms", "drained"}
    assert per_source.isdisjoint(dir(AudioEngine))
    assert per_source <= set(dir(PlaybackSource))


async def test_each_source_port_controls_its_own_source_only() -> None:
    backend = WavBackend(keep_speaker=True)
    engine = engine_on(backend)
    ports: dict[str, SourcePort] = {name: engine.source(name) for name in SOURCES}
    for name, freq in (("speech", 300), ("content", 1000), ("comms", 2000)):
        await ports[name].write(tone(freq, 0.9, -20), item_id=name)
    engine.run_periods(10)
    ports["content"].duck()
    ports["comms"].pause()
    engine.source("speech").set_gain(-6.0)
    engine.run_periods(20)  # past the 80 ms attack and the fades
    window = backend.speaker_samples()[-4 * N :, 0]
    assert abs(level_at(window, 300, 24_000) - -26.0) < 0.2  # speech: its own trim only
    assert abs(level_at(window, 1000, 24_000) - -32.0) < 0.2  # content: ducked 12 dB
    assert level_at(window, 2000, 24_000) < -90.0  # comms: paused
    assert ports["comms"].played_ms("comms") == 10 * 20 + 5  # held where the fade ended
    ports["comms"].resume()
    ports["content"].unduck()
    engine.run_periods(5)
    assert ports["comms"].played_ms("comms") == 10 * 20 + 5 + 5 * 20
    assert ports["speech"].played_ms("content") == 0  # items belong to their source
    engine.close()


async def test_a_sources_flush_cuts_a_timed_output_and_answers_at_the_fade_end() -> None:
    backend = TimedWavBackend(dac_delay_frames=2 * N, fade_frames=120)
    assert isinstance(backend, OutputClock)
    engine = engine_on(backend)
    speech = engine.source("speech")
    await speech.write(tone(440, 2.0, -6), item_id="r")
    engine.run_periods(10)
    heard = speech.played_ms("r")
    assert heard > 0 and backend.cuts == []
    speech.flush()  # barge-in, and nothing else: no engine call
    assert len(backend.cuts) == 1  # the speaker itself was told to fade out now
    # what the truncate sends, read at once: the fade's end, not the last DAC stamp
    assert speech.played_ms("r") == backend.cuts[0] * 1000 // 24_000 == heard + 5
    engine.run_periods(10)
    assert speech.played_ms("r") == heard + 5  # the dropped mix never counts as heard
    assert speech.idle()
    engine.close()


async def test_the_speaker_is_told_while_a_source_holds_audio_behind_the_ring() -> None:
    """While a source has audio queued the callback's ring must not run dry (a dry
    period then is a dropout, counted); once the source is drained, it may."""
    backend = TimedWavBackend(dac_delay_frames=2 * N)
    engine = engine_on(backend)
    speech = engine.source("speech")
    await speech.write(tone(440, 0.2, -6), item_id="r")  # 10 periods
    engine.run_periods(3)
    playing = backend.expecting[-1]
    engine.run_periods(15)
    drained = backend.expecting[-1]
    assert (playing, drained) == (1 << SOURCES.index("speech"), 0)  # speech's bit, then none
    assert speech.idle()
    engine.close()


async def test_a_flush_without_a_timed_output_asks_for_no_cut() -> None:
    backend = WavBackend(keep_speaker=True)
    engine = engine_on(backend)
    speech = engine.source("speech")
    await speech.write(tone(440, 1.0, -6), item_id="r")
    engine.run_periods(10)
    speech.flush()
    assert speech.played_ms("r") == 200  # the DAC's own count until the next period
    engine.run_periods(2)
    assert speech.played_ms("r") == 205
    assert np.all(backend.speaker_samples()[10 * N + 120 :, 0] == 0)
    engine.close()


def test_the_cut_is_asked_after_the_flush_request_is_published() -> None:
    mixer = Mixer(
        {name: SampleRing(N * 10, name=name) for name in SOURCES}, period_samples=N, rate_hz=24_000
    )
    channel = mixer.channels["content"]
    seen: list[tuple[int, int]] = []

    def cut() -> list[int]:
        seen.append((channel.req_flush_seq, channel.req_flush_to))
        return [11, 22, 33, 44]

    source = PlaybackSource(channel, is_closed=lambda: False, cut_output=cut)
    source.write_nowait(bytes(2 * 100), item_id="x")
    source.flush()
    assert seen == [(1, 100)]  # the thread sees the flush with (or before) the cut
    assert source.played_ms("x") == 33 * 1000 // 24_000  # content's own position
