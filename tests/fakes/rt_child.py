"""The mic extension alone on the clocked fake card, in a child (``python -m tests.fakes.rt_child``).

The parent writes the card's ``.asoundrc`` (:func:`tests.fakes.clockcard.write_asoundrc`)
and runs this module with ``HOME`` pointing at it; each mode prints one JSON object.

- ``wait <ms>``: skip to the newest frame, then read ``ms`` of audio with a 2 s
  timeout; reports whether it came and how long the wait took (monotonic ns).
  With ``CLOCK_SHIM`` set (a library also in ``LD_PRELOAD`` that exports
  ``wall_clock_behind``), the wall clock is set an hour behind just before the
  read: it shows which clock the wait used.
- ``late <reads>``: the card's mic plays a ramp (sample k is k mod 32768); the reader
  lets the ring fill to one device period short of full, then reads one period, its
  copy paused half-way (``_set_copy_pause_ns``) while the callback writes on.
  Reports whether every period read was a contiguous piece of the ramp, and the
  frames the extension counted as overwritten.
- ``heard``: two short bursts, each left to run dry; ``heard()`` read while dry.
- ``drycut <cuts>``: the speaker plays a -6 dBFS 440 Hz tone and is cut when its
  ring holds less than the fade (one short period left); reports when each cut
  was asked (monotonic ns), so the parent finds it in the card's recording, and
  the frames queued then.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
import time
from typing import Any

import numpy as np

RATE_HZ = 48_000
PERIOD = 480  # the capture callback's period: 10 ms
RAMP = 32_768


def device_index(name: str, key: str) -> int:
    import pyaudio

    audio = pyaudio.PyAudio()
    try:
        for index in range(audio.get_device_count()):
            info = audio.get_device_info_by_index(index)
            if info["name"] == name and int(info[key]) > 0:
                return index
    finally:
        audio.terminate()
    raise SystemExit(f"no {name} device: is HOME the card's directory?")


def mic_index() -> int:
    return device_index("hux_mic", "maxInputChannels")


FADE = 240  # 5 ms, the engine's default
SHORT = 120  # the speaker callback's period: 2.5 ms


def drycut(cuts: int) -> dict[str, Any]:
    out = rtout().Output(
        device=device_index("hux_spk", "maxOutputChannels"),
        rate_hz=RATE_HZ,
        channels=1,
        period_frames=SHORT,
        ring_frames=RATE_HZ,
        fade_frames=FADE,
        latency_s=0.01,
    )
    out.start()
    t = np.arange(RATE_HZ // 5) / RATE_HZ
    tone = (16384 * np.sin(2 * np.pi * 440 * t)).astype("<i2")
    asked: list[int] = []
    left: list[int] = []
    for index in range(cuts):
        # not a whole number of callbacks (PortAudio may ask 2 short periods at once),
        # so the ring is left with less than the fade (35-120 frames: a ramp over 2
        # frames is a click whatever the fade does); the cut at another phase each time
        out.write(tone[: len(tone) - SHORT - index * 17])
        until = time.monotonic() + 2.0
        while not 0 < out.queued() < FADE and time.monotonic() < until:
            time.sleep(0.0001)
        asked.append(time.monotonic_ns())
        left.append(int(out.queued()))
        seq, _ = out.cut()
        time.sleep(0.05)
        out.resume(seq, out.written())
    short = int(out.status().get("short_cuts", 0))  # older builds: never counted
    out.close()
    return {"asked_ns": asked, "queued": left, "short_cuts": short}


def heard() -> dict[str, Any]:
    """The speaker plays two short bursts, each left to run dry (the callback then fills
    its periods with zeros): after each, ``heard()`` (the ring position at the DAC) is
    read while the ring is dry, several times over 100 ms, and beside what was written."""
    out = rtout().Output(
        device=device_index("hux_spk", "maxOutputChannels"),
        rate_hz=RATE_HZ,
        channels=1,
        period_frames=SHORT,
        ring_frames=RATE_HZ,
        fade_frames=FADE,
        latency_s=0.01,
    )
    out.start()
    t = np.arange(1000) / RATE_HZ
    burst = (16384 * np.sin(2 * np.pi * 440 * t)).astype("<i2")
    readings: list[list[int]] = []
    written: list[int] = []
    for _ in range(2):
        out.write(burst)
        written.append(int(out.written()))
        time.sleep(0.1)  # 1000 frames play in 21 ms: the rest of the wait is dry
        seen = []
        for _ in range(5):
            seen.append(int(out.heard()))
            time.sleep(0.02)
        readings.append(seen)
    out.close()
    return {"written": written, "heard": readings}


def rtout() -> Any:
    return importlib.import_module("huxleyd.audio._rt")


def open_input(ring_frames: int) -> Any:
    stream = rtout().Input(
        device=mic_index(),
        rate_hz=RATE_HZ,
        channels=1,
        period_frames=PERIOD,
        ring_frames=ring_frames,
        latency_s=0.02,
        realtime=False,
    )
    stream.start()
    return stream


def wait(ms: int) -> dict[str, Any]:
    stream = open_input(16_384)
    out = np.zeros(RATE_HZ * ms // 1000, dtype=np.int16)
    stream.read(np.zeros(PERIOD, dtype=np.int16), 2.0)  # the card runs
    shim = os.environ.get("CLOCK_SHIM")
    if shim:
        ctypes.CDLL(shim).wall_clock_behind(ctypes.c_long(3600))
    stream.discard(0)
    began = time.monotonic_ns()
    ok = bool(stream.read(out, 2.0))
    waited = time.monotonic_ns() - began
    stream.close()
    return {"ok": ok, "waited_ns": waited}


def late(reads: int) -> dict[str, Any]:
    _rt = rtout()
    ring = 2048  # a power of two: the capacity is exactly this
    stream = open_input(ring)
    out = np.zeros(PERIOD, dtype=np.int16)
    stream.read(out, 2.0)
    torn = 0
    try:
        for _ in range(reads):
            stream.discard(0)
            while stream.queued() < ring - PERIOD + 32:  # one period short of full
                time.sleep(0.0005)
            # 25 ms: two or three callbacks write over the copy's second half meanwhile
            _rt._set_copy_pause_ns(25_000_000)
            if not stream.read(out, 2.0):
                raise SystemExit("the card stopped delivering")
            steps = np.remainder(np.diff(out.astype(np.int64)), RAMP)
            torn += int(np.any(steps != 1))
    finally:
        _rt._set_copy_pause_ns(0)
    _, overwritten = stream.counters()
    stream.close()
    return {"reads": reads, "torn": torn, "overwritten": int(overwritten)}


def ramp_pcm(seconds: int = 4) -> bytes:
    """The mic file for ``late``: a counter, so any seam shows (a whole number of ramps)."""
    count = RATE_HZ * seconds // RAMP * RAMP
    return np.remainder(np.arange(count, dtype=np.int64), RAMP).astype("<i2").tobytes()


def main(argv: list[str]) -> int:
    if argv[0] == "wait":
        result = wait(int(argv[1]))
    elif argv[0] == "late":
        result = late(int(argv[1]))
    elif argv[0] == "heard":
        result = heard()
    elif argv[0] == "drycut":
        result = drycut(int(argv[1]))
    else:
        raise SystemExit(f"unknown mode {argv[0]!r}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
