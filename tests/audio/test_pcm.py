"""The PCM vocabulary against the real things: ffmpeg's WAV files and pipes,
Python's ``wave`` module, ffmpeg's own resampled tones."""

from __future__ import annotations

import shutil
import struct
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from huxleyd.errors import AudioError
from huxleyd.pcm import (
    BYTES_PER_MS,
    RATE_HZ,
    WavFormatError,
    bytes_to_ms,
    ms_to_bytes,
    parse_wav,
    read_wav,
    resample,
    resample_pcm16,
    wav_bytes,
    write_wav,
)


def ffmpeg(*args: str) -> bytes:
    """Run ffmpeg; its standard output (a WAV when told to write ``pipe:1``)."""
    return subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args],
        check=True,
        capture_output=True,
    ).stdout


def sine(rate_hz: int, *, channels: int = 1, seconds: float = 0.5) -> list[str]:
    source = f"sine=frequency=440:sample_rate={rate_hz}:duration={seconds}"
    return ["-f", "lavfi", "-i", source, "-ac", str(channels), "-c:a", "pcm_s16le"]


def wave_module_samples(path: Path) -> tuple[int, int, np.ndarray]:
    with wave.open(str(path), "rb") as wav:
        raw = wav.readframes(wav.getnframes())
        return wav.getframerate(), wav.getnchannels(), np.frombuffer(raw, "<i2")


# ---------------------------------------------------------------- the vocabulary


def test_the_contract_is_24_khz_mono_pcm16_at_48_bytes_per_ms() -> None:
    assert (RATE_HZ, BYTES_PER_MS) == (24_000, 48)
    assert ms_to_bytes(20) == 960 and ms_to_bytes(20, 16_000) == 640
    assert bytes_to_ms(48_000) == 1000.0 and bytes_to_ms(32_000, 16_000) == 1000.0


def test_byte_counts_are_whole_samples_at_any_rate() -> None:
    # 3 ms at 22.05 kHz is 66.15 samples: 66 whole samples, 132 bytes (never 133)
    assert ms_to_bytes(3, 22_050) == 132
    assert all(ms_to_bytes(ms, 11_025) % 2 == 0 for ms in range(1, 50))
    assert bytes_to_ms(49) == bytes_to_ms(48) == 1.0  # an odd trailing byte is no sample


# ---------------------------------------------------------------- WAV parsing


def test_an_ffmpeg_wav_file_parses_as_the_wave_module_reads_it(tmp_path: Path) -> None:
    for channels in (1, 2):
        path = tmp_path / f"tone{channels}.wav"
        ffmpeg(*sine(22_050, channels=channels), str(path))
        rate, count, expected = wave_module_samples(path)
        wav = parse_wav(path.read_bytes(), what=str(path))
        assert (wav.rate_hz, wav.channels) == (rate, count) == (22_050, channels)
        assert np.array_equal(wav.samples.reshape(-1), expected)
        assert read_wav(path).samples.shape == (11_025, channels)


def test_a_wav_piped_with_placeholder_sizes_runs_to_the_end(tmp_path: Path) -> None:
    piped = ffmpeg(*sine(16_000), "-f", "wav", "pipe:1")
    assert b"data\xff\xff\xff\xff" in piped  # ffmpeg could not seek back to fill it in
    path = tmp_path / "tone.wav"
    ffmpeg(*sine(16_000), str(path))
    from_pipe = parse_wav(piped, what="ffmpeg's pipe")
    assert from_pipe.rate_hz == 16_000
    assert np.array_equal(from_pipe.samples, read_wav(path).samples)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_espeak_ngs_streaming_wav_parses_to_its_end() -> None:
    out = subprocess.run(["espeak-ng", "--stdout", "--", "Hello."], capture_output=True, check=True)
    (declared,) = struct.unpack_from("<I", out.stdout, out.stdout.index(b"data") + 4)
    wav = parse_wav(out.stdout, what="espeak-ng", channels=1)
    assert declared > len(out.stdout)  # a placeholder, not the size
    assert wav.samples.shape[0] == (len(out.stdout) - out.stdout.index(b"data") - 8) // 2
    assert np.abs(wav.mono()).max() > 5000  # speech, not silence


def test_a_data_chunk_followed_by_another_chunk_stops_at_its_size() -> None:
    data = wav_bytes(np.arange(10, dtype="<i2").tobytes(), 8000)
    trailing = data + b"LIST\x04\x00\x00\x00abcd"
    assert np.array_equal(parse_wav(trailing).mono(), np.arange(10))


def test_wav_bytes_and_write_wav_are_what_the_wave_module_reads(tmp_path: Path) -> None:
    samples = (np.arange(-500, 500, dtype=np.int16) * 30).astype(np.int16)
    write_wav(tmp_path / "a.wav", samples, rate_hz=16_000)
    (tmp_path / "b.wav").write_bytes(wav_bytes(samples.tobytes(), 16_000))
    for name in ("a.wav", "b.wav"):
        assert wave_module_samples(tmp_path / name)[0] == 16_000
        assert np.array_equal(wave_module_samples(tmp_path / name)[2], samples)


def test_what_is_not_a_pcm16_wav_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(WavFormatError, match="espeak-ng's output is not a WAV file"):
        parse_wav(b"not a wav file at all", what="espeak-ng's output")
    stereo = ffmpeg(*sine(8000, channels=2), "-f", "wav", "pipe:1")
    with pytest.raises(WavFormatError, match=r"the TTS: 2 channel.*expected mono 16-bit"):
        parse_wav(stereo, what="the TTS", channels=1)
    eight_bit = ffmpeg("-f", "lavfi", "-i", "sine=duration=0.1", "-c:a", "pcm_u8", "-f", "wav", "-")
    with pytest.raises(WavFormatError, match=r"expected PCM16 .16-bit. samples, got 8-bit"):
        parse_wav(eight_bit)
    header = wav_bytes(bytes(4), 8000)[:12]
    with pytest.raises(WavFormatError, match="WAV data before its format"):
        parse_wav(header + b"data\x04\x00\x00\x00" + bytes(4))
    with pytest.raises(WavFormatError, match="without a data chunk"):
        parse_wav(wav_bytes(bytes(4), 8000)[:36])
    (tmp_path / "x.wav").write_bytes(b"RIFF")
    with pytest.raises(AudioError, match=r"x\.wav is not a WAV file"):
        read_wav(tmp_path / "x.wav")
    with pytest.raises(AudioError, match="cannot read"):
        read_wav(tmp_path / "missing.wav")


# ---------------------------------------------------------------- whole-buffer resampling


def test_resampling_matches_ffmpeg_generating_at_the_target_rate() -> None:
    low = parse_wav(ffmpeg(*sine(22_050, seconds=1.0), "-f", "wav", "-")).mono()
    native = parse_wav(ffmpeg(*sine(RATE_HZ, seconds=1.0), "-f", "wav", "-")).mono()
    ours = resample(low, 22_050, RATE_HZ)
    assert ours.dtype == np.int16 and ours.shape == native.shape
    inner = slice(200, -200)  # the filter's edges ramp in and out
    error = ours[inner].astype(np.float64) - native[inner]
    assert np.sqrt(np.mean(error**2)) < 0.01 * np.sqrt(np.mean(native[inner].astype(float) ** 2))


def test_resampling_bytes_keeps_pcm16_and_clips() -> None:
    # a full-scale 1 kHz square wave rings past full scale once filtered (Gibbs)
    square = np.where((np.arange(2400) // 12) % 2 == 0, 32767, -32768).astype("<i2")
    out = np.frombuffer(resample_pcm16(square.tobytes(), RATE_HZ, 16_000), "<i2")
    assert out.shape == (1600,)  # 2400 samples at 24 kHz -> 1600 at 16 kHz
    polarity = np.where((np.arange(1600) // 8) % 2 == 0, 1, -1)
    inner = slice(50, -50)  # away from the filter's edges
    assert np.all(out[inner].astype(np.int32) * polarity[inner] >= 0)  # clipped, never wrapped
    assert out.max() == 32767 and out.min() == -32768
    loud = square.tobytes()
    assert resample_pcm16(loud, RATE_HZ, RATE_HZ) is loud  # same rate: untouched
    assert resample_pcm16(loud + b"\x01", RATE_HZ, 16_000) == out.tobytes()  # odd byte dropped


def test_resampling_frames_keeps_the_channels() -> None:
    stereo = np.stack([np.full(480, 1000), np.full(480, -1000)], axis=1).astype(np.int16)
    out = resample(stereo, 48_000, RATE_HZ)
    assert out.shape == (240, 2)
    assert abs(int(out[120, 0]) - 1000) <= 2 and abs(int(out[120, 1]) + 1000) <= 2
