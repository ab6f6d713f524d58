"""A sound card made of ALSA's ``file`` plugin, for driving real PortAudio without hardware.

:func:`write_asoundrc` writes an ``.asoundrc`` whose PCMs ``hux_in`` (capture:
reads a raw PCM file through ``infile``) and ``hux_out`` (playback: writes
a raw PCM file) sit on ALSA's ``null`` PCM, and makes them the ``default``
pair. PortAudio reads ALSA's configuration when it initialises, so the
engine runs in a child process whose ``HOME`` points at that directory:
``python -m tests.fakes.audio_alsa <mode> <dir> ...`` (see :func:`run_child`).

The ``null`` PCM has no clock: reads and writes return at once. The child
therefore runs the engine with ``paced=False`` and a
:class:`~huxleyd.audio.pacing.ScaledClock`, which is exactly how the engine
treats any device that does not pace itself.

Modes (each prints one JSON object on stdout):

- ``loopback <dir> <seconds> <speed> <mic_channel> <in_channels>``: every
  mic frame read by asyncio is written back to the ``comms`` source.
- ``latency <dir> <speed> <clicks>``: after a warm-up, queue clicks on
  ``speech`` ten periods apart; report the engine period each was queued
  at and the period the playout clock first called it heard.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.fakes.children import run_json_child

RATE_HZ = 48_000
"""The rate the child opens the file-plugin devices at."""


def write_asoundrc(directory: Path, *, infile: Path, outfile: Path) -> Path:
    """Write ``directory/.asoundrc`` (capture from ``infile``, playback to ``outfile``)."""
    text = f"""
pcm.hux_out {{
    type file
    slave.pcm "null"
    file "{outfile}"
    format "raw"
}}
pcm.hux_in {{
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "{infile}"
    format "raw"
}}
pcm.!default {{
    type asym
    playback.pcm "hux_out"
    capture.pcm "hux_in"
}}
"""
    path = directory / ".asoundrc"
    path.write_text(text)
    return path


def run_child(directory: Path, *args: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Run this module in a child whose ALSA configuration is ``directory/.asoundrc``."""
    env = dict(os.environ, HOME=str(directory))
    env.pop("ALSA_CONFIG_PATH", None)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    argv = ["-m", "tests.fakes.audio_alsa", *args]
    result: dict[str, Any] = run_json_child(argv, env, timeout_s=timeout_s, cwd=root)
    return result


# -- the child side -------------------------------------------------------------


def _engine(speed: float, *, in_channels: int, mic_channel: int) -> Any:
    from huxleyd.audio.backends.pyaudio_backend import PyAudioBackend
    from huxleyd.audio.engine import AudioEngine
    from huxleyd.audio.pacing import ScaledClock
    from huxleyd.audio.settings import AudioSettings

    backend = PyAudioBackend(
        capture_device="hux_in",
        playback_device="hux_out",
        rate_hz=RATE_HZ,
        input_channels=in_channels,
        paced=False,
    )
    settings = AudioSettings(input_channels=in_channels, mic_channel=mic_channel)
    return AudioEngine(backend, settings=settings, clock=ScaledClock(speed)), backend


def engine_backend_prefill(engine: Any) -> int:
    return int(engine._backend.prefill_periods)


def _describe(engine: Any) -> dict[str, Any]:
    fmt = engine.device_format
    stats = engine.stats()
    return {
        "input_rate_hz": fmt.input_rate_hz,
        "output_rate_hz": fmt.output_rate_hz,
        "output_latency_s": fmt.output_latency_s,
        "description": fmt.description,
        "periods": stats.periods,
        "underruns": stats.underruns,
        "mic_frames_dropped": stats.mic_frames_dropped,
        "input_peak_dbfs": stats.input_peak_dbfs,
        "device_state": stats.device_state.value,
        "latency_samples": round(stats.output_latency_ms * 24),
        "prefill_periods": engine_backend_prefill(engine),
    }


async def _loopback(
    seconds: float, speed: float, mic_channel: int, in_channels: int
) -> dict[str, Any]:
    engine, _ = _engine(speed, in_channels=in_channels, mic_channel=mic_channel)
    engine.start()
    frames = [await engine.read_mic() for _ in range(10)]  # 200 ms of lead against hiccups
    for _ in range(int(seconds * 50)):
        for frame in frames:
            await engine.source("comms").write(frame.pcm, item_id="loop")
        frames = [await engine.read_mic()]
    await engine.source("comms").write(frames[0].pcm, item_id="loop")
    await engine.source("comms").drained()
    result = _describe(engine)
    result["played_ms"] = engine.source("comms").played_ms("loop")
    result["source_gaps"] = engine.stats().source_gaps
    engine.close()
    return result


async def _latency(speed: float, clicks: int) -> dict[str, Any]:
    """Queue ``clicks`` clicks 10 periods apart; note when each was queued and heard."""
    engine, _ = _engine(speed, in_channels=1, mic_channel=0)
    engine.start()
    for _ in range(25):  # warm up half a second
        await engine.read_mic()
    click = (np.full(240, 20000, dtype=np.int16)).tobytes()
    queued: list[int] = []
    heard: list[int | None] = []
    for index in range(clicks):
        item = f"click{index}"
        queued.append(engine.stats().periods)
        await engine.source("speech").write(click, item_id=item)
        heard.append(None)
        for _ in range(10):
            await engine.read_mic()
            if heard[-1] is None and engine.source("speech").played_ms(item) > 0:
                heard[-1] = engine.stats().periods
    result = _describe(engine)
    result["queued_periods"] = queued
    result["heard_periods"] = heard
    engine.close()
    return result


def main(argv: list[str]) -> int:
    mode, directory = argv[0], Path(argv[1])
    del directory  # the .asoundrc is found through HOME
    if mode == "loopback":
        seconds, speed = float(argv[2]), float(argv[3])
        result = asyncio.run(_loopback(seconds, speed, int(argv[4]), int(argv[5])))
    elif mode == "latency":
        result = asyncio.run(_latency(float(argv[2]), int(argv[3])))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
