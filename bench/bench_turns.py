"""Turn latencies of DESIGN.md, through the real runtime in real time.

The daemon's Runtime runs with the WAV sound card paced by a real-time
clock, mock pins and the simulator on loopback (speed 1.0), exactly as the
end-to-end tests build it. Each row is a measurement beside its budget:

- press → first mic frame sent: for every frame after the press, the time
  from the frame entering the capture ring to ``input_audio_buffer.append``
  leaving the coordinator (budget: one frame, 20 ms);
- release → commit + response.create sent (budget 5 ms);
- audio delta received → its first sample at the device (the playout clock
  says it was heard; budget 60 ms);
- barge-in: press while speaking → the speaker output is silent, measured on
  the output samples (budget one period, 20 ms);
- truncate accuracy: ``audio_end_ms`` sent against the samples of the item
  really written (budget ±1 frame).

The PyAudio-through-ALSA column of "queued → at the device" is in the audio
rows (``bench_audio``), measured with the same engine.
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
        assert rt.engine is not None and rt.connection is not None and rt.coordinator is not None
        self.frame_ready: list[float] = []
        self.appends: list[float] = []
        self.first_chunk_at: dict[str, float] = {}
        engine, connection, coordinator = rt.engine, rt.connection, rt.coordinator
        read_mic, append, on_event = (
            engine.read_mic,
            connection.append_audio,
            coordinator.on_provider_event,
        )
        clock = rig.clock

        async def timed_read() -> MicFrame:
            frame = await read_mic()
            # The WAV card has no input latency and the engine captures a
            # period at its start: the frame is in the ring at captured_at.
            self.frame_ready.append(frame.captured_at)
            return frame

        def timed_append(pcm: bytes) -> None:
            self.appends.append(clock.monotonic())
            append(pcm)

        def timed_event(event: Any) -> None:
            if isinstance(event, AudioChunk) and event.item_id not in self.first_chunk_at:
                self.first_chunk_at[event.item_id] = clock.monotonic()
            on_event(event)

        engine.read_mic = timed_read  # type: ignore[method-assign]
        connection.append_audio = timed_append  # type: ignore[method-assign]
        coordinator.on_provider_event = timed_event  # type: ignore[method-assign]


async def _measure(tmp: Path) -> list[Row]:
    with scenario_skill_installed(tmp):
        async with Rig(tmp, _scenario(), earcons=False, speed=1.0) as rig:
            probes = Probes(rig)
            coordinator = rig.rt.coordinator
            engine = rig.rt.engine
            assert coordinator is not None and engine is not None
            # Turn 1: frame latency, release → commit, delta → device.
            await rig.say_into_mic(seconds=0.6)
            sent = len(probes.appends)
            frame_ms = [
                (sent_at - ready) * 1000
                for sent_at, ready in zip(probes.appends, probes.frame_ready[-sent:], strict=False)
            ]
            await until(lambda: len(probes.first_chunk_at) == 1, "the reply's first delta")
            item, received_at = next(iter(probes.first_chunk_at.items()))
            # Poll the playout clock at 0.5 ms: the polling is the measurement.
            while engine.played_ms(item) <= 0:  # noqa: ASYNC110
                await asyncio.sleep(0.0005)
            delta_to_device_ms = (rig.clock.monotonic() - received_at) * 1000
            await until(lambda: coordinator.state.value == "idle", "turn 1 over")
            release_ms = coordinator.last_turn.timings_ms()["release_to_commit_ms"]  # type: ignore[union-attr]
            # Turn 2: barge-in 1.5 s into a long reply.
            await rig.say_into_mic(seconds=0.4)
            await until(lambda: len(probes.first_chunk_at) == 2, "the long reply")
            start = rig.speaker().shape[0]
            await asyncio.sleep(1.5)
            button = rig.rt.button
            assert button is not None
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
        return asyncio.run(_measure(Path(tmp)))
