"""Turn latencies of docs/conventions.md, through the real runtime in real time.

The daemon's Runtime runs with the WAV sound card paced by a real-time
clock, mock pins and the simulator on loopback (speed 1.0), exactly as the
end-to-end tests build it. Each row is a measurement beside its budget:

- press → first mic frame sent: for every frame after the press, the time
  from the frame being complete at the device (its capture time plus its
  length plus the input latency PortAudio reports) to
  ``input_audio_buffer.append`` leaving the coordinator (budget: one frame);
- release → commit + response.create sent (budget 5 ms);
- audio delta received → its first sample at the device (the playout clock
  says it was heard; budget 60 ms);
- barge-in: press while speaking → the speaker output is silent, measured on
  the output samples (budget one period, 20 ms);
- truncate accuracy: ``audio_end_ms`` sent against the samples of the item
  really written (budget ±1 frame).

Measured on the WAV sound card, which runs the same C mix as the card. (A second
run on PortAudio → ALSA's ``file`` plugin went with PyAudio's blocking backend in
issue 39; the card's own path, the C callbacks and the C feeder, is measured on the
clocked card by ``bench/bench_realtime.py``.)
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench import Row
from huxleyd.audio.types import MicFrame
from huxleyd.providers.events import AudioChunk
from huxleyd.sim.scenario import ResponseSpec, Scenario, TurnSpec
from tests.e2e.harness import (
    RATE,
    Rig,
    first_nonsilent,
    scenario_skill_installed,
    silent_run_samples,
    until,
)

AREA = "turns (wav, real time)"
PERIOD = RATE // 50


def _scenario() -> Scenario:
    speech = ResponseSpec(say="x", tone_hz=440.0, duration_ms=1500)
    long = ResponseSpec(say="x", tone_hz=330.0, duration_ms=6000)
    return Scenario(
        turns=(
            TurnSpec(responses=(speech,)),
            TurnSpec(responses=(long,)),
            TurnSpec(responses=(speech,)),
        )
    )


class Probes:
    """Timestamps taken around the runtime's seams (no change to its code)."""

    def __init__(self, rig: Rig) -> None:
        rt = rig.rt
        self.frame_latency_ms: list[float] = []
        self._ready: float | None = None
        self.appends: list[float] = []
        self.first_chunk_at: dict[str, float] = {}
        engine, connection = rt.parts.engine, rt.parts.connection
        read_mic, append = engine.read_mic, connection.append_audio
        clock = rig.clock

        async def timed_read() -> MicFrame:
            frame = await read_mic()
            # captured_at is the frame's first sample at the microphone: the
            # whole frame exists a frame later, plus the device's input latency.
            fmt = engine.device_format
            latency = fmt.input_latency_s if fmt is not None else 0.0
            self._ready = frame.captured_at + frame.duration_ms / 1000 + latency
            return frame

        def timed_append(pcm: bytes) -> None:
            # The pump appends the frame it has just read: exact pairing.
            now = clock.monotonic()
            self.appends.append(now)
            if self._ready is not None:  # the pump's first read began before the probe
                self.frame_latency_ms.append((now - self._ready) * 1000)
                self._ready = None
            append(pcm)

        def timed_event(event: Any) -> None:
            if isinstance(event, AudioChunk) and event.item_id not in self.first_chunk_at:
                self.first_chunk_at[event.item_id] = clock.monotonic()

        engine.read_mic = timed_read  # type: ignore[method-assign]
        connection.append_audio = timed_append  # type: ignore[method-assign]
        # The session's bus hands each event to the coordinator, then to this probe
        # (subscription order, synchronously): the stamp is taken after the
        # coordinator queued the chunk, microseconds late against a 30 ms budget.
        # (Patching coordinator.on_provider_event, as this probe once did, reaches
        # nothing since the bus holds the handler: the bench waited forever.)
        connection.subscribe(timed_event)


async def _measure(tmp: Path, rig: Rig | None = None) -> list[Row]:
    with scenario_skill_installed(tmp):
        async with rig or Rig(tmp, _scenario(), earcons=False, speed=1.0) as rig:
            probes = Probes(rig)
            coordinator = rig.rt.parts.coordinator
            engine = rig.rt.parts.engine
            # Turn 1: frame latency, release → commit, delta → device.
            await rig.say_into_mic(seconds=0.6)
            frame_ms = list(probes.frame_latency_ms)
            await until(lambda: len(probes.first_chunk_at) == 1, "the reply's first delta")
            item, received_at = next(iter(probes.first_chunk_at.items()))
            # Poll the playout clock at 0.5 ms: the polling is the measurement.
            while engine.source("speech").played_ms(item) <= 0:  # noqa: ASYNC110
                await asyncio.sleep(0.0005)
            delta_to_device_ms = (rig.clock.monotonic() - received_at) * 1000
            await until(lambda: coordinator.state.value == "idle", "turn 1 over")
            release_ms = coordinator.last_turn.timings_ms()["release_to_commit_ms"]  # type: ignore[union-attr]
            # Turn 2: barge-in 1.5 s into a long reply.
            await rig.say_into_mic(seconds=0.4)
            await until(lambda: len(probes.first_chunk_at) == 2, "the long reply")
            start = rig.speaker().shape[0]
            await asyncio.sleep(1.5)
            button = rig.rt.parts.button
            pressed_at = rig.speaker().shape[0]
            button.press()
            await until(lambda: len(rig.sim.truncations) == 1, "truncate")
            await asyncio.sleep(0.3)
            out = rig.speaker()
            loud = np.flatnonzero(np.abs(out[start:]) > 0)
            last_sound = start + int(loud[-1]) if len(loud) else pressed_at
            silent_ms = max(0, last_sound - pressed_at) * 1000 / RATE
            reply_start = first_nonsilent(out, start) or start
            span = out[reply_start : last_sound + 1]
            heard_ms = (len(span) - silent_run_samples(span)) * 1000 / RATE
            truncate_err_ms = abs(rig.sim.truncations[0].audio_end_ms - heard_ms)
            button.release()
    return _rows(AREA, frame_ms, release_ms, delta_to_device_ms, silent_ms, truncate_err_ms)


def _rows(
    area: str,
    frame_ms: list[float],
    release_ms: float,
    delta_to_device_ms: float,
    silent_ms: float,
    truncate_err_ms: float,
) -> list[Row]:
    AREA = area
    return [
        Row(AREA, "press → first frame sent (max)", max(frame_ms), "ms", 20, "budget", "≤ 1 frame"),
        Row(
            AREA,
            "press → first frame sent (median)",
            statistics.median(frame_ms),
            "ms",
            20,
            "budget",
        ),
        Row(AREA, "release → commit + response.create", release_ms, "ms", 5, "budget", "≤ 5 ms"),
        Row(
            AREA,
            "audio delta → first sample at device",
            delta_to_device_ms,
            "ms",
            60,
            "budget",
            "≤ 60 ms",
        ),
        Row(AREA, "barge-in press → speaker silent", silent_ms, "ms", 20, "budget", "≤ 1 period"),
        Row(AREA, "truncate audio_end_ms error", truncate_err_ms, "ms", 20, "budget", "±1 frame"),
    ]


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        wav = asyncio.run(_measure(Path(tmp)))
    return wav
