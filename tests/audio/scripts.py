"""Random control scripts for the engine: what asyncio might do, period by period.

Two engines driven by the same seed get the same requests at the same periods,
so tests can compare two paths (idle path on/off, C kernel vs numpy) bit for bit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from huxleyd.audio.engine import AudioEngine
from huxleyd.audio.types import SOURCES
from tests.audio.signals import tone


@dataclass(frozen=True, slots=True)
class Script:
    """How often and how strongly to poke the engine."""

    write_p: float = 0.15
    """Chance per period of queuing a tone (mostly on speech)."""
    other_source_p: float = 0.3
    """Chance that the tone goes to another source than speech."""
    control_p: float = 0.05
    """Chance per period of a duck, pause, resume, flush, gain or master change."""
    level_dbfs: float = -10.0
    seconds: tuple[float, ...] = (0.013, 0.05, 0.2)
    gains_db: tuple[float, ...] = (-6.0, 0.0)
    masters: tuple[float, ...] = (0.5, 1.0)
    mic_p: float = 0.0
    """Chance per period of a capture-rate switch, and of the mic on or off."""


def poke(engine: AudioEngine, rng: random.Random, period: int, script: Script) -> None:
    """This period's random requests (call before ``engine.step()``)."""
    if rng.random() < script.write_p:
        name = rng.choice(SOURCES[1:]) if rng.random() < script.other_source_p else "speech"
        pcm = tone(rng.choice([220, 440, 880]), rng.choice(script.seconds), script.level_dbfs)
        if name == "earcon":
            engine.play_earcon(pcm, item_id=f"e{period}")
        else:
            engine.source(name).write_nowait(pcm, item_id=f"{name}{period}")
    if rng.random() < script.control_p:
        action = rng.choice(["duck", "unduck", "pause", "resume", "flush", "gain", "master"])
        source = engine.source(rng.choice(SOURCES))
        if action == "gain":
            source.set_gain(rng.choice(script.gains_db))
        elif action == "master":
            engine.set_master_gain(rng.choice(script.masters))
        else:
            getattr(source, action)()
    if script.mic_p and rng.random() < script.mic_p:
        engine.set_capture_rate(rng.choice([24000, 16000]))
    if script.mic_p and rng.random() < script.mic_p:
        engine.set_capture_active(rng.random() < 0.7)
