"""The WAV backend: a sound card made of files, for tests, demos and machines without audio.

Mic: the samples of ``mic_wav`` (resampled to ``rate_hz`` when needed), then
whatever :meth:`WavBackend.feed_mic` queued, then silence. Speaker: every
period written goes to ``speaker_wav`` (when set) and, with
``keep_speaker=True``, to memory for :meth:`WavBackend.speaker_samples`
(tests; off by default because memory would grow 48 kB/s for as long as a
daemon runs).

The backend is not paced (``DeviceFormat.paced`` is False): the engine's
clock sets the tempo, so with a :class:`~huxleyd.audio.pacing.ScaledClock`
a scenario runs 20x faster than real time, and with ``engine.step()`` it runs
exactly as many periods as a test asks. ``output_latency_s`` simulates a
device buffer: the engine's playout clock treats sample ``k`` of the speaker
file as heard at ``k / rate_hz + output_latency_s``.

``feed_mic`` may be called from asyncio while the engine thread reads: the
two sides meet in a :class:`~huxleyd.audio.ring.SampleRing`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from huxleyd.audio.backends.base import DeviceFormat, IoStatus
from huxleyd.audio.backends.growing_wav import GrowingWavWriter
from huxleyd.audio.ring import SampleRing
from huxleyd.errors import AudioDeviceError, AudioError
from huxleyd.pcm import Int16Array, pcm16_view, period_frames, read_wav, resample

_RECORD_BLOCK_S = 10


class WavBackend:
    """Mic from a WAV file or fed PCM; speaker to a WAV file and/or memory."""

    def __init__(
        self,
        *,
        mic_wav: Path | None = None,
        speaker_wav: Path | None = None,
        rate_hz: int = 24_000,
        input_channels: int = 1,
        output_channels: int = 1,
        output_latency_s: float = 0.0,
        keep_speaker: bool = False,
        mic_feed_s: float = 120.0,
    ) -> None:
        self.rate_hz = rate_hz
        self.input_channels = input_channels
        self.output_channels = output_channels
        self.output_latency_s = output_latency_s
        self._mic_path = mic_wav
        self._speaker_path = speaker_wav
        self._keep = keep_speaker
        self._mic_file: Int16Array = np.zeros((0, input_channels), dtype=np.int16)
        self._mic_cursor = 0
        self._feed = SampleRing(int(mic_feed_s * rate_hz) * input_channels, name="mic feed")
        self._writer: GrowingWavWriter | None = None
        self._blocks: list[Int16Array] = []
        self._recorded = 0
        self._frames_in = 0
        self.is_open = False
        self.opens = 0
        if mic_wav is not None:
            self._mic_file = self._load_mic(mic_wav)

    # -- the AudioBackend interface (audio thread) ---------------------------

    def open(self, *, period_ms: int) -> DeviceFormat:
        self._frames_in = period_frames(self.rate_hz, period_ms)
        if self._speaker_path is not None and self._writer is None:
            try:
                self._speaker_path.parent.mkdir(parents=True, exist_ok=True)
                # Valid while it grows: play or read it while the daemon runs.
                self._writer = GrowingWavWriter(
                    self._speaker_path, channels=self.output_channels, rate_hz=self.rate_hz
                )
            except OSError as exc:
                raise AudioDeviceError(
                    f"{self._speaker_path}: cannot write the speaker WAV: {exc}"
                ) from exc
        self.is_open = True
        self.opens += 1
        return DeviceFormat(
            input_rate_hz=self.rate_hz,
            output_rate_hz=self.rate_hz,
            input_channels=self.input_channels,
            output_channels=self.output_channels,
            output_latency_s=self.output_latency_s,
            input_latency_s=0.0,
            paced=False,
            description=f"wav mic={self._mic_path or 'fed/silence'} speaker={self._speaker_path or 'memory'}",
        )

    def read(self, out: Int16Array) -> IoStatus:
        frames = out.shape[0]
        flat = out.reshape(-1)
        from_file = min(frames, self._mic_file.shape[0] - self._mic_cursor)
        if from_file > 0:
            out[:from_file] = self._mic_file[self._mic_cursor : self._mic_cursor + from_file]
            self._mic_cursor += from_file
        at = max(from_file, 0) * self.input_channels
        got = self._feed.read_into(flat, at, flat.shape[0] - at)
        flat[at + got :] = 0
        return IoStatus.OK

    def write(self, data: Int16Array) -> IoStatus:
        if self._writer is not None:
            self._writer.write(data.data)
        if self._keep:
            self._record(data)
        return IoStatus.OK

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()  # the header's sizes, a last time
            self._writer = None
        self.is_open = False

    # -- for tests and scenarios (any thread) --------------------------------

    def feed_mic(self, pcm: bytes) -> None:
        """Queue PCM16 (at ``rate_hz``, ``input_channels`` interleaved) as mic input."""
        samples = pcm16_view(pcm, what="feed_mic")
        if samples.shape[0] % self.input_channels:
            raise ValueError(
                f"feed_mic: {samples.shape[0]} samples is not whole {self.input_channels}-channel frames"
            )
        if self._feed.write(samples) != samples.shape[0]:
            raise AudioError(
                f"feed_mic: {samples.shape[0]} samples do not fit; the mic feed holds "
                f"{self._feed.capacity} and {self._feed.available()} are still queued"
            )

    def mic_queued_frames(self) -> int:
        """Mic frames (file and fed) the engine has not read yet."""
        file_left = self._mic_file.shape[0] - self._mic_cursor
        return int(max(file_left, 0) + self._feed.available() // self.input_channels)

    def speaker_samples(self) -> Int16Array:
        """Everything written so far, ``(frames, output_channels)`` (needs ``keep_speaker``)."""
        if not self._keep:
            raise AudioError("speaker_samples() needs WavBackend(keep_speaker=True)")
        total = self._recorded
        if total == 0:
            return np.zeros((0, self.output_channels), dtype=np.int16)
        return np.concatenate(self._blocks)[:total].copy()

    def speaker_pcm(self) -> bytes:
        """The speaker output so far as PCM16 bytes (channel 0)."""
        return np.ascontiguousarray(self.speaker_samples()[:, 0]).astype("<i2").tobytes()

    # -- internals -----------------------------------------------------------

    def _record(self, data: Int16Array) -> None:
        frames = data.shape[0]
        block_frames = _RECORD_BLOCK_S * self.rate_hz
        at = self._recorded % block_frames
        if at == 0 and self._recorded // block_frames >= len(self._blocks):
            # one new block every ten seconds of audio, not one per period
            self._blocks.append(np.zeros((block_frames, self.output_channels), dtype=np.int16))
        block = self._blocks[self._recorded // block_frames]
        first = min(frames, block_frames - at)
        block[at : at + first] = data[:first]
        self._recorded += first  # publish after the copy
        if first < frames:
            self._record(data[first:])

    def _load_mic(self, path: Path) -> Int16Array:
        return load_mic_wav(path, input_channels=self.input_channels, rate_hz=self.rate_hz)


def load_mic_wav(path: Path, *, input_channels: int, rate_hz: int) -> Int16Array:
    """The mic WAV's samples at ``rate_hz``; :class:`AudioError` naming the file when it
    is not a PCM16 WAV with ``input_channels`` channels. The backend and
    ``--check-config`` (:mod:`huxleyd.config.preflight_io`) both read it with this."""
    wav = read_wav(path)
    if wav.channels != input_channels:
        raise AudioError(
            f"{path}: mic WAV has {wav.channels} channel(s); audio.input_channels is "
            f"{input_channels}"
        )
    return resample(wav.samples, wav.rate_hz, rate_hz)
