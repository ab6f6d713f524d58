"""Audio settings (``[audio]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioSettings:
    """How the engine reaches the sound card and shapes what it plays.

    ``backend = "auto"`` uses the card when PortAudio finds it (the C callbacks,
    fed by the C feeder) and the WAV backend otherwise (and says so in the log).
    ``"pyaudio"`` (PyAudio's blocking I/O, a second path to the card until issue
    39) is refused, naming ``audio.backend``: ``"callback"`` is the card.
    """

    backend: Literal["auto", "callback", "wav"] = "auto"
    mix: Literal["c_feeder"] = "c_feeder"
    """The one speaker mix: the C mixer core, run by the C feeder on the card (a thread
    of the C extension, without the GIL: a busy Python thread cannot starve the
    speaker) and by the audio thread on the WAV backend. ``"python"`` (a second mix,
    until issue 39) is gone: a huxleyd.toml that still asks for it is refused, naming
    ``audio.mix`` (exit 78), so nobody believes a mix runs that does not; delete the
    line."""
    capture_device: str = "default"
    """ALSA PCM name (``plughw:CARD=seeed2micvoicec,DEV=0``), ``default``, or an index."""
    playback_device: str = "default"
    device_rate_hz: int | None = field(default=None, metadata=bounds(8000, 192000))
    """Rate to open the device at; ``None`` means its native (default) rate."""
    input_channels: int = field(default=1, metadata=bounds(1, 8))
    mic_channel: int = field(default=0, metadata=bounds(0, 7))
    """Which channel of a multi-mic HAT feeds the model."""
    output_channels: int = field(default=1, metadata=bounds(1, 8))
    """Channels to open the playback device with; the mono mix goes to each."""
    period_ms: int = field(default=20, metadata=bounds(5, 100))
    duck_depth_db: float = field(default=-12.0, metadata=bounds(-60.0, 0.0))
    duck_attack_ms: float = field(default=80.0, metadata=bounds(1.0, 2000.0))
    duck_release_ms: float = field(default=600.0, metadata=bounds(1.0, 5000.0))
    default_volume: int = field(default=50, metadata=bounds(0, 100))
    """The user volume (0-100) at the very first start; afterwards the last level is kept."""
    mixer_control: str | None = None
    """ALSA mixer control for SetVolume (``PCM``, ``Speaker``…); found by scanning when unset."""
    mixer_card: str = "default"
    mic_wav: Path | None = None
    """WAV backend: the microphone reads this file (silence when unset or exhausted)."""
    speaker_wav: Path | None = None
    """WAV backend: the speaker output is written to this file."""
    reopen_interval_s: float = field(default=3.0, metadata=bounds(0.1, 60.0))
    """After a device is lost, try to reopen it this often."""
    output_prefill_periods: int = field(default=2, metadata=bounds(1, 16))
    """No effect since issue 39: the silence PyAudio's blocking backend queued at
    its open, and that backend is gone. Still read, so the files that set it (the
    shipped huxleyd.toml did) still load."""
    output_lead_ms: int = field(default=30, metadata=bounds(5, 500))
    """Callback backend: how far ahead of the DAC the engine keeps the C ring
    while something plays. It absorbs a busy Python thread delaying the engine;
    a cut does not wait for it (the callback drops it), nor does the first sample
    after idle (the engine mixes that far ahead at once)."""
    ramp_ms: float = field(default=5.0, metadata=bounds(5.0, 100.0))
    """Fade length for pause, resume and flush (barge-in): short, but never a click."""
    limiter_threshold_dbfs: float = field(default=-1.0, metadata=bounds(-24.0, -0.1))
    """The soft limiter leaves everything below this level untouched."""
    speech_ring_ms: int = field(default=60_000, metadata=bounds(500, 600_000))
    """Model speech buffered ahead of the speaker; a fuller ring makes its writer wait."""
    earcon_ring_ms: int = field(default=10_000, metadata=bounds(500, 60_000))
    """Room for queued earcons; ``play_earcon`` refuses a sound that does not fit."""
    content_ring_ms: int = field(default=5_000, metadata=bounds(500, 60_000))
    """Media buffered ahead (the media producer waits when full)."""
    comms_ring_ms: int = field(default=1_000, metadata=bounds(100, 60_000))
    """Call audio buffered ahead; small, because calls want low latency."""
    capture_ring_ms: int = field(default=2_000, metadata=bounds(100, 60_000))
    """Mic audio kept for a slow reader; older frames are dropped (and counted)."""
    wav_rate_hz: int = field(default=24_000, metadata=bounds(8000, 192000))
    """WAV backend: the simulated device's rate."""
    wav_speed: float = field(default=1.0, metadata=bounds(0.01, 1000.0))
    """WAV backend: how many times faster than real time the engine runs."""
