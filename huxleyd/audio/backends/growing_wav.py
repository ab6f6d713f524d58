"""A WAV file that stays a valid WAV while it grows.

Python's :mod:`wave` writes the RIFF and data sizes only when it closes (or
on every ``writeframes``, with a seek each time), so the speaker file of a
running daemon read as empty or broken. :class:`GrowingWavWriter` writes
PCM16 frames and rewrites the two size fields every ``patch_every`` writes
and at close: a reader (``aplay``, ``ffplay``, a test) opening the file at
any moment gets a valid WAV holding everything up to the last patch. Each
write is flushed, so the samples on disk (past the header's count) are all
that was played, even when the process is killed before its next patch: a
power-cut test reads what the speaker really got from them
(:func:`pcm_on_disk`).

Layer: a file, used from the audio thread: no allocation per write beyond
what the OS does, two small seeks per patch.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

HEADER_BYTES = 44
"""A canonical PCM WAV header: RIFF, fmt (16 bytes), data."""
RIFF_SIZE_AT = 4
DATA_SIZE_AT = 40
MAX_DATA_BYTES = 0xFFFFFFFF - HEADER_BYTES
"""WAV sizes are 32-bit; past this (~12 h of 48 kHz mono) the header stops growing."""


def wav_header(*, channels: int, rate_hz: int, data_bytes: int) -> bytes:
    """The 44-byte header of a PCM16 WAV with ``data_bytes`` of samples."""
    block = channels * 2
    return (
        b"RIFF"
        + struct.pack("<I", HEADER_BYTES - 8 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, rate_hz, rate_hz * block, block, 16)
        + b"data"
        + struct.pack("<I", data_bytes)
    )


class GrowingWavWriter:
    """PCM16 frames to ``path``; the header is kept right every ``patch_every`` writes."""

    def __init__(self, path: Path, *, channels: int, rate_hz: int, patch_every: int = 10) -> None:
        self.path = path
        self.channels = channels
        self.rate_hz = rate_hz
        self.patch_every = max(1, patch_every)
        self._file: BinaryIO | None = path.open("wb")
        self._file.write(wav_header(channels=channels, rate_hz=rate_hz, data_bytes=0))
        self._file.flush()
        self.data_bytes = 0
        self._since_patch = 0

    def write(self, pcm: bytes | memoryview) -> None:
        """Append PCM16 LE interleaved frames."""
        if self._file is None:
            return
        self._file.write(pcm)
        self._file.flush()  # on disk at once: a SIGKILL loses no played period
        self.data_bytes += memoryview(pcm).nbytes  # len() of a 2-D view counts rows
        self._since_patch += 1
        if self._since_patch >= self.patch_every:
            self.patch()

    def patch(self) -> None:
        """Write the sizes of what is on disk now into the header, and flush."""
        file = self._file
        if file is None:
            return
        size = min(self.data_bytes, MAX_DATA_BYTES)
        file.flush()
        file.seek(RIFF_SIZE_AT)
        file.write(struct.pack("<I", HEADER_BYTES - 8 + size))
        file.seek(DATA_SIZE_AT)
        file.write(struct.pack("<I", size))
        file.seek(0, 2)
        file.flush()
        self._since_patch = 0

    def close(self) -> None:
        """Patch the header a last time and close. Idempotent."""
        if self._file is None:
            return
        self.patch()
        self._file.close()
        self._file = None


def pcm_on_disk(path: Path) -> bytes:
    """Every sample a :class:`GrowingWavWriter` wrote to ``path`` (PCM16 LE), counted
    by the file's length, not its header: after a kill the header lags by up to
    ``patch_every`` writes."""
    data = path.read_bytes()[HEADER_BYTES:]
    return data[: len(data) & ~1]
