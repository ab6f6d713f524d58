"""What the speaker played of the power-cut test's book, as it plays.

Reads raw PCM16 48 kHz mono on stdin (arecord on the loopback's capture
side: what the daemon wrote to the card) and prints, each time another
100 ms of the book was heard, ``POWERCUT heard <seconds> s``: the book's
own seconds (a 1 kHz tone), counted in 10 ms blocks. Silence (a pause, an
underrun) and other sounds (the simulator's 550 Hz speech, the earcons) do
not count, so the count is the place in the book when it played from the
start. It runs in the VM (image/powercut-test/selftest.sh), with the
daemon's numpy; its lines go to the serial console, where the host reads
them to pull the plug.

Every 5 s of input it also writes to stderr (the console too) what those
blocks were: ``POWERCUT blocks book B silent S other O``. A book that stops
reaching the speaker (silent), that underruns in every block (other: a tone
with gaps is not pure) or that plays under something else (other) reads
differently there, where the count alone only stops growing.

    python heard.py [START_S]   (START_S: the book's place where playing starts)
"""

from __future__ import annotations

import sys

import numpy as np

RATE_HZ = 48_000
BLOCK = RATE_HZ // 100
"""10 ms: ten whole periods of the book's 1 kHz tone, so the projection is exact."""
BOOK_HZ = 1000.0
MIN_RMS = 4.0
"""Below this the block is silence: the book (at half scale) at the lowest volume
(10 %, -60 dB on the softvol control) is still at RMS 11."""
PURITY = 0.9
"""The tone's share of the block's RMS: a block that is the book, not speech or a mix."""


def classify(samples: np.ndarray) -> tuple[int, int, int]:
    """(book, silent, other): how many whole 10 ms blocks of ``samples`` are the
    book's tone, silence, and anything else."""
    blocks = samples[: len(samples) // BLOCK * BLOCK].astype(np.float64).reshape(-1, BLOCK)
    phase = 2 * np.pi * BOOK_HZ * np.arange(BLOCK) / RATE_HZ
    tone = np.abs(blocks @ np.exp(-1j * phase)) * 2 / BLOCK / np.sqrt(2)
    rms = np.sqrt(np.mean(blocks**2, axis=1))
    loud = rms > MIN_RMS
    book = int(np.count_nonzero(loud & (tone > PURITY * rms)))
    silent = len(blocks) - int(np.count_nonzero(loud))
    return book, silent, len(blocks) - book - silent


def book_blocks(samples: np.ndarray) -> int:
    """How many whole 10 ms blocks of ``samples`` are the book's tone."""
    return classify(samples)[0]


def main() -> None:
    start_s = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    heard = 0
    said = -1
    window = [0, 0, 0]  # book, silent, other blocks of the last 5 s of input
    print("POWERCUT recorder up", flush=True)
    while chunk := sys.stdin.buffer.read(BLOCK * 2 * 5):  # 50 ms at a time
        kinds = classify(np.frombuffer(chunk[: len(chunk) & ~1], dtype="<i2"))
        window = [w + k for w, k in zip(window, kinds, strict=True)]
        heard += kinds[0]
        if heard // 10 != said:  # each further 100 ms of the book
            said = heard // 10
            print(f"POWERCUT heard {start_s + heard / 100:.2f} s", flush=True)
        if sum(window) >= 500:
            book, silent, other = window
            print(
                f"POWERCUT blocks book {book} silent {silent} other {other}",
                file=sys.stderr,
                flush=True,
            )
            window = [0, 0, 0]


if __name__ == "__main__":
    main()
