"""The speaker WAV can be read while the daemon still writes it."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from huxleyd.audio.backends.growing_wav import GrowingWavWriter, pcm_on_disk
from huxleyd.audio.backends.wav_backend import WavBackend


def _read(path: Path) -> tuple[int, int, bytes]:
    with wave.open(str(path), "rb") as wav:
        return wav.getframerate(), wav.getnframes(), wav.readframes(wav.getnframes())


def test_a_reader_gets_a_valid_wav_at_any_moment(tmp_path: Path) -> None:
    path = tmp_path / "speaker.wav"
    writer = GrowingWavWriter(path, channels=1, rate_hz=24_000, patch_every=3)
    assert _read(path) == (24_000, 0, b"")  # valid from the first byte
    period = np.arange(480, dtype="<i2").tobytes()
    for _ in range(7):
        writer.write(period)
    rate, frames, data = _read(path)  # still open: 6 periods patched, 1 not yet
    assert (rate, frames) == (24_000, 6 * 480)
    assert data == period * 6
    writer.close()
    assert _read(path)[1] == 7 * 480
    writer.close()  # idempotent


def test_a_killed_writer_leaves_every_period_it_played_on_disk(tmp_path: Path) -> None:
    """A SIGKILL comes between patches: the header then counts fewer periods than
    were played (a power-cut test once read the bookmark 320 ms "ahead" of what the
    header counted). What was written is on disk all the same, and pcm_on_disk
    reads it by the file's length."""
    path = tmp_path / "speaker.wav"
    writer = GrowingWavWriter(path, channels=1, rate_hz=24_000, patch_every=10)
    period = np.arange(480, dtype="<i2").tobytes()
    for _ in range(7):
        writer.write(period)
    # no close: the process is gone (another reader, another file object)
    assert _read(path)[1] == 0
    assert pcm_on_disk(path) == period * 7


def test_the_wav_backend_speaker_file_is_readable_while_it_runs(tmp_path: Path) -> None:
    path = tmp_path / "out" / "speaker.wav"
    backend = WavBackend(speaker_wav=path)
    backend.open(period_ms=20)
    samples = np.full((480, 1), 1234, dtype=np.int16)
    for _ in range(50):
        backend.write(samples)
    _rate, frames, data = _read(path)
    assert frames >= 40 * 480, "at most one patch interval behind"
    assert set(np.frombuffer(data, "<i2")) == {1234}
    backend.close()
    assert _read(path)[1] == 50 * 480
