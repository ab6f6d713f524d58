"""Audio settings (``[audio]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.settings_schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioSettings:
    """How the engine reaches the sound card and shapes what it plays.

    ``backend = "auto"`` uses PyAudio when PortAudio finds a device and the
    WAV backend otherwise (and says so in the log).
    """

    backend: Literal["auto", "pyaudio", "wav"] = "auto"
    capture_device: str = "default"
    """ALSA PCM name (``plughw:CARD=seeed2micvoicec,DEV=0``), ``default``, or an index."""
    playback_device: str = "default"
    device_rate_hz: int | None = field(default=None, metadata=bounds(8000, 192000))
    """Rate to open the device at; ``None`` means its native (default) rate."""
    input_channels: int = field(default=1, metadata=bounds(1, 8))
    mic_channel: int = field(default=0, metadata=bounds(0, 7))
    """Which channel of a multi-mic HAT feeds the model."""
    period_ms: int = field(default=20, metadata=bounds(5, 100))
    duck_depth_db: float = field(default=-12.0, metadata=bounds(-60.0, 0.0))
    duck_attack_ms: float = field(default=80.0, metadata=bounds(1.0, 2000.0))
    duck_release_ms: float = field(default=600.0, metadata=bounds(1.0, 5000.0))
    mixer_control: str | None = None
    """ALSA mixer control for SetVolume (``PCM``, ``Speaker``…); found by scanning when unset."""
    mixer_card: str = "default"
    mic_wav: Path | None = None
    """WAV backend: the microphone reads this file (silence when unset or exhausted)."""
    speaker_wav: Path | None = None
    """WAV backend: the speaker output is written to this file."""
    reopen_interval_s: float = field(default=3.0, metadata=bounds(0.1, 60.0))
    """After a device is lost, try to reopen it this often."""
