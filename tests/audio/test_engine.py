"""The engine driven period by period over the WAV backend: what comes out of the speaker."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from huxleyd.audio.backends.wav_backend import WavBackend
from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.settings import AudioSettings
from huxleyd.clock import ManualClock
from huxleyd.errors import AudioError
from huxleyd.pcm import write_wav
from tests.audio.signals import dominant_frequency, level_at, tone, tone_samples, windows

N = 480  # one 20 ms period at 24 kHz


def make_engine(
    *, rate_hz: int = 24000, latency_s: float = 0.0, mic_wav: Path | None = None, **settings: Any
) -> tuple[AudioEngine, WavBackend]:
    backend = WavBackend(
        keep_speaker=True, rate_hz=rate_hz, output_latency_s=latency_s, mic_wav=mic_wav
    )
    engine = AudioEngine(
        backend, settings=AudioSettings(backend="wav", **settings), clock=ManualClock()
    )
    return engine, backend


def speaker(backend: WavBackend) -> np.ndarray:
    return backend.speaker_samples()[:, 0]


async def test_speech_reaches_the_speaker_sample_for_sample() -> None:
    engine, backend = make_engine()
    pcm = tone(440, 0.1, -6)
    await engine.source("speech").write(pcm, item_id="a")
    engine.run_periods(7)
    out = speaker(backend)
    np.testing.assert_array_equal(out[:2400], np.frombuffer(pcm, "<i2"))
    assert np.all(out[2400:] == 0) and len(out) == 7 * N  # a full buffer, silence after
    assert engine.source("speech").played_ms("a") == 100
    assert engine.source("speech").idle()


async def test_ducking_lowers_content_by_the_depth_within_the_attack_and_restores_it() -> None:
    """Measured on the output samples at a 48 kHz device (through the resampler)."""
    engine, backend = make_engine(
        rate_hz=48000, duck_depth_db=-12.0, duck_attack_ms=80, duck_release_ms=600
    )
    await engine.source("content").write(tone(1000, 3.0, -20))
    engine.run_periods(25)
    await engine.source("speech").write(tone(300, 2.0, -20), item_id="s")
    engine.source("content").duck()  # speech starts: the focus layer ducks the content
    engine.run_periods(50)
    engine.source("content").unduck()
    engine.run_periods(50)
    out = speaker(backend)
    content = [level_at(w, 1000, 48000) for w in windows(out, 960)]
    speech = [level_at(w, 300, 48000) for w in windows(out, 960)]
    assert content[5:25] == pytest.approx([-20.0] * 20, abs=0.05)
    assert -31.0 < content[26] < -21.0  # a ramp, not a step
    assert content[25 + 4 + 1 : 75] == pytest.approx([-32.0] * 45, abs=0.1)  # depth within 80 ms
    assert speech[27:74] == pytest.approx([-20.0] * 47, abs=0.05)  # speech itself untouched
    rising = content[75 : 75 + 31]
    assert all(b >= a - 0.01 for a, b in itertools.pairwise(rising))
    assert -28.0 < content[75 + 15] < -24.0  # halfway (in dB) at half the release
    assert content[75 + 30 + 1 : 125] == pytest.approx([-20.0] * 19, abs=0.1)  # back after 600 ms


async def test_barge_in_flush_is_silent_after_one_ramp_and_truncates_the_item() -> None:
    engine, backend = make_engine()
    speech = engine.source("speech")
    await speech.write(tone(440, 2.0, -6), item_id="resp1")
    engine.run_periods(10)
    engine.source("speech").flush()
    engine.run_periods(3)
    out = speaker(backend)
    ramp = 120  # 5 ms
    cut = 10 * N
    assert np.any(out[cut : cut + ramp] != 0)  # a fade, not a hard cut
    envelope = np.abs(out[cut : cut + ramp].astype(float)) / np.abs(
        tone_samples(440, 2.0, -6)[cut : cut + ramp] + 0.5
    )
    assert envelope[-10:].max() < envelope[:10].max()
    assert np.all(out[cut + ramp :] == 0)  # silent within one period plus the ramp
    assert (
        engine.source("speech").played_ms("resp1") == (cut + ramp) * 1000 // 24000
    )  # audio_end_ms for truncate
    assert speech.queued_ms() == 0 and engine.source("speech").idle()
    await speech.write(tone(880, 0.04, -6), item_id="resp2")
    engine.run_periods(2)
    np.testing.assert_array_equal(speaker(backend)[13 * N : 15 * N], tone_samples(880, 0.04, -6))
    assert (
        engine.source("speech").played_ms("resp1") == 205
        and engine.source("speech").played_ms("resp2") == 40
    )


async def test_flush_abandons_a_write_that_waits_for_room() -> None:
    engine, backend = make_engine(speech_ring_ms=500)
    speech = engine.source("speech")
    writer = asyncio.ensure_future(speech.write(tone(440, 3.0, -6), item_id="long"))
    await asyncio.sleep(0)
    assert not writer.done()  # 3 s into a 0.5 s ring: waiting for room
    engine.run_periods(5)
    await asyncio.sleep(0)
    engine.source("speech").flush()
    await asyncio.wait_for(writer, timeout=1)
    engine.run_periods(40)
    out = speaker(backend)
    assert np.all(out[6 * N :] == 0)
    assert engine.source("speech").played_ms("long") == (5 * N + 120) * 1000 // 24000


async def test_the_writer_waits_for_room_and_the_audio_thread_wakes_it() -> None:
    engine, backend = make_engine(speech_ring_ms=500)
    pcm = tone(500, 1.5, -10)
    writer = asyncio.ensure_future(engine.source("speech").write(pcm, item_id="x"))
    await asyncio.sleep(0)  # the writer fills the ring, then waits
    speech = engine.source("speech")
    assert not writer.done() and speech.buffered_ms() == 500 == speech.capacity_ms
    assert speech.high_water_ms() == 500 and speech.queued_ms() == 500
    for _ in range(80):
        engine.step()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert writer.done()
    out = speaker(backend)
    np.testing.assert_array_equal(out[: len(pcm) // 2], np.frombuffer(pcm, "<i2"))
    assert engine.stats().source_gaps == 0


async def test_an_earcon_before_speech_plays_first_and_speech_follows_without_a_gap() -> None:
    engine, backend = make_engine()
    earcon = tone_samples(1200, 700 / 24000, -10)
    speech = tone_samples(300, 0.1, -10)
    await engine.source("speech").write(b"")  # nothing playing yet
    handle = engine.play_earcon(earcon.tobytes())
    await handle  # queued at once
    await engine.source("speech").write(speech.tobytes(), item_id="r")
    engine.run_periods(8)
    out = speaker(backend)
    np.testing.assert_array_equal(out[:700], earcon)
    np.testing.assert_array_equal(out[700 : 700 + len(speech)], speech)
    assert np.all(out[700 + len(speech) :] == 0)
    assert engine.source("speech").played_ms("r") == 100


async def test_an_earcon_without_before_speech_mixes_over_it() -> None:
    engine, backend = make_engine()
    engine.play_earcon(np.full(480, 1000, np.int16).tobytes(), before_speech=False)
    await engine.source("speech").write(np.full(480, 2000, np.int16).tobytes())
    engine.run_periods(2)
    assert np.all(speaker(backend)[:480] == 3000)


async def test_an_earcon_too_long_for_its_ring_is_refused_whole() -> None:
    engine, _ = make_engine(earcon_ring_ms=500)
    with pytest.raises(AudioError, match="1000 ms do not fit; 500 ms free"):
        engine.play_earcon(tone(440, 1.0, -10))
    assert engine.source("earcon").queued_ms() == 0


@pytest.mark.parametrize("rate_hz", [24000, 48000])
async def test_played_ms_follows_the_device_latency(rate_hz: int) -> None:
    """Truth: the speaker file, where sample k is heard at k/rate + latency."""
    latency_s = 0.05
    engine, backend = make_engine(rate_hz=rate_hz, latency_s=latency_s)
    speech = engine.source("speech")
    await speech.write(np.full(7200, 8000, np.int16).tobytes(), item_id="a")  # 300 ms
    await speech.write(np.full(4800, -8000, np.int16).tobytes(), item_id="b")  # 200 ms
    errors = []
    for _ in range(35):
        engine.step()
        out = speaker(backend)
        heard = out[: max(0, len(out) - int(latency_s * rate_hz))]
        truth_a = np.count_nonzero(heard > 4000) * 1000 / rate_hz
        truth_b = np.count_nonzero(heard < -4000) * 1000 / rate_hz
        errors.append(abs(engine.source("speech").played_ms("a") - truth_a))
        errors.append(abs(engine.source("speech").played_ms("b") - truth_b))
    assert max(errors) <= 1.0  # to the millisecond (the contract is one period)
    assert (
        engine.source("speech").played_ms("a") == 300
        and engine.source("speech").played_ms("b") == 200
    )
    assert engine.source("speech").played_ms("never-written") == 0


async def test_drained_returns_when_the_last_sample_has_been_heard() -> None:
    engine, _ = make_engine(latency_s=0.04)
    await engine.source("speech").write(tone(440, 0.1, -10), item_id="a")
    drained = asyncio.ensure_future(engine.source("speech").drained())
    done_at = None
    for period in range(1, 12):
        engine.step()
        for _ in range(3):
            await asyncio.sleep(0)
        if drained.done() and done_at is None:
            done_at = period
    assert done_at == 7  # 100 ms of speech + 40 ms of device buffer = 7 periods
    assert engine.source("speech").idle()


async def test_heard_waits_for_the_earcon_itself() -> None:
    engine, _ = make_engine()
    handle = engine.play_earcon(tone(1000, 0.05, -10))
    heard = asyncio.ensure_future(handle.heard())
    engine.run_periods(2)
    await asyncio.sleep(0)
    assert not heard.done()
    engine.step()
    await asyncio.wait_for(heard, timeout=1)


async def test_pause_holds_content_and_resume_continues_where_it_stopped() -> None:
    engine, backend = make_engine()
    data = (np.arange(24000) % 1000 + 1).astype(np.int16)
    await engine.source("content").write(data.tobytes(), item_id="book")
    engine.run_periods(5)
    engine.source("content").pause()
    engine.run_periods(5)
    engine.source("content").resume()
    engine.run_periods(5)
    out = speaker(backend)
    assert np.all(out[5 * N + 120 : 10 * N] == 0)
    # after the 5 ms fade-in, the stream continues from the sample after the fade-out
    resumed = out[10 * N + 120 : 11 * N]
    np.testing.assert_array_equal(resumed, data[5 * N + 120 + 120 : 5 * N + 120 + N])
    assert engine.source("content").played_ms("book") == (10 * N + 120) * 1000 // 24000


async def test_mic_frames_carry_the_wav_in_order_with_capture_times(tmp_path: Path) -> None:
    mic = (np.arange(24000) % 20000).astype(np.int16)
    write_wav(tmp_path / "mic.wav", mic)
    clock = ManualClock(100.0)
    backend = WavBackend(keep_speaker=True, mic_wav=tmp_path / "mic.wav")
    engine = AudioEngine(backend, settings=AudioSettings(), clock=clock)
    for _ in range(5):
        clock.advance(0.02)
        engine.step()
    frames = [await engine.read_mic() for _ in range(5)]
    assert [f.seq for f in frames] == [0, 1, 2, 3, 4]
    assert [f.captured_at for f in frames] == pytest.approx([100.0, 100.02, 100.04, 100.06, 100.08])
    joined = np.frombuffer(b"".join(f.pcm for f in frames), "<i2")
    np.testing.assert_array_equal(joined, mic[: 5 * N])
    assert frames[0].rate_hz == 24000 and frames[0].duration_ms == 20


async def test_the_capture_rate_can_switch_to_16k(tmp_path: Path) -> None:
    write_wav(tmp_path / "mic.wav", tone_samples(1000, 1.0, -6, rate_hz=48000), rate_hz=48000)
    engine, _ = make_engine(rate_hz=48000, mic_wav=tmp_path / "mic.wav")
    engine.set_capture_rate(16000)
    engine.run_periods(20)
    frames = [engine.read_mic_nowait() for _ in range(20)]
    assert all(f is not None and f.rate_hz == 16000 and len(f.pcm) == 640 for f in frames)
    pcm = np.frombuffer(b"".join(f.pcm for f in frames if f), "<i2")[1600:]
    assert dominant_frequency(pcm, 16000) == pytest.approx(1000, abs=2)
    assert level_at(pcm[:3200], 1000, 16000) == pytest.approx(-6, abs=0.1)
    with pytest.raises(ValueError, match="capture rate"):
        engine.set_capture_rate(44100)


async def test_a_slow_mic_reader_loses_the_oldest_frames_and_they_are_counted() -> None:
    engine, _ = make_engine(capture_ring_ms=100)  # 6 frames guaranteed
    engine.run_periods(20)
    frames = []
    while (frame := engine.read_mic_nowait()) is not None:
        frames.append(frame)
    assert [f.seq for f in frames] == list(range(14, 20))
    assert engine.stats().mic_frames_dropped == 14
    assert engine.mic_high_water_frames() == 6  # the bound was reached
    engine.run_periods(3)
    assert engine.drain_mic() == 3  # PTT press: old audio is not sent
    assert engine.read_mic_nowait() is None
    assert engine.stats().mic_frames_dropped == 14


async def test_four_loud_sources_are_limited_not_wrapped() -> None:
    engine, backend = make_engine()
    for name, freq in (("speech", 200), ("earcon", 300), ("content", 500), ("comms", 700)):
        await engine.source(name).write(tone(freq, 0.5, 0))  # type: ignore[arg-type]
    engine.run_periods(25)
    out = speaker(backend).astype(np.int32)
    assert out.max() <= 32767 and out.min() >= -32768
    jumps = np.abs(np.diff(out))
    assert jumps.max() < 20000  # int16 wrap-around would jump by ~65000


async def test_stats_report_levels_and_counters(tmp_path: Path) -> None:
    write_wav(tmp_path / "mic.wav", tone_samples(440, 2.0, -6))
    engine, _ = make_engine(mic_wav=tmp_path / "mic.wav")
    await engine.source("speech").write(tone(440, 2.0, -12))
    engine.run_periods(90)
    stats = engine.stats()
    assert stats.periods == 90 and not stats.running
    assert stats.input_peak_dbfs == pytest.approx(-6, abs=0.2)
    assert stats.input_rms_dbfs == pytest.approx(-9, abs=0.3)
    assert stats.output_peak_dbfs == pytest.approx(-12, abs=0.2)
    assert stats.underruns == stats.overruns == stats.late_periods == 0
    assert stats.device_state.value == "open"


async def test_a_gap_inside_an_item_is_counted_but_a_new_item_is_not() -> None:
    engine, _ = make_engine()
    speech = engine.source("speech")
    await speech.write(tone(440, 0.1, -10), item_id="a")
    engine.run_periods(8)  # ran dry mid-stream
    await speech.write(tone(440, 0.1, -10), item_id="a")  # ...and the item continues: a gap
    engine.run_periods(8)
    await speech.write(tone(440, 0.1, -10), item_id="b")  # a new item after silence: fine
    engine.run_periods(8)
    assert engine.stats().source_gaps == 1 and engine.stats().underruns == 1


async def test_close_is_idempotent_and_ends_waiting_readers() -> None:
    engine, backend = make_engine()
    engine.step()
    reader = asyncio.ensure_future(engine.read_mic())
    engine.drain_mic()
    await asyncio.sleep(0)
    engine.close()
    engine.close()
    with pytest.raises(AudioError, match="closed"):
        await asyncio.wait_for(reader, timeout=1)
    with pytest.raises(AudioError, match="closed"):
        await engine.source("speech").write(tone(440, 0.1, -10))
    with pytest.raises(AudioError):
        engine.step()
    assert not backend.is_open


def test_unknown_sources_are_named_in_the_error() -> None:
    engine, _ = make_engine()
    with pytest.raises(ValueError, match="unknown audio source 'music'; expected one of speech"):
        engine.source("music")  # type: ignore[arg-type]


async def test_after_a_flush_played_ms_is_what_the_device_really_played() -> None:
    """48 kHz device with 40 ms of buffer: the truncate position lags the mix by the latency,
    and once the device has played out it equals the speech samples in the output."""
    engine, backend = make_engine(rate_hz=48000, latency_s=0.04)
    await engine.source("speech").write(np.full(24000, 8000, np.int16).tobytes(), item_id="r")
    engine.run_periods(10)
    assert (
        engine.source("speech").played_ms("r") == 200 - 40 - 1
    )  # minus the resampler's 10-sample delay, rounded down
    engine.source("speech").flush()
    engine.run_periods(5)
    out = speaker(backend)
    heard_ms = np.count_nonzero(np.abs(out) > 100) / 48
    assert abs(engine.source("speech").played_ms("r") - heard_ms) <= 1.0
    assert engine.source("speech").played_ms("r") == 205  # 10 periods plus the 5 ms fade


async def test_an_inactive_capture_queues_nothing_and_loses_nothing() -> None:
    engine, backend = make_engine()
    backend.feed_mic(bytes(2 * 24000))
    engine.set_capture_active(False)  # idle: nobody listens
    engine.run_periods(10)
    assert engine.read_mic_nowait() is None
    assert engine.stats().mic_frames_dropped == 0
    engine.set_capture_active(True)  # PTT pressed
    engine.run_periods(3)
    frames = [engine.read_mic_nowait() for _ in range(3)]
    assert all(f is not None for f in frames)
    assert engine.read_mic_nowait() is None
