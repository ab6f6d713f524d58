"""Provider settings (``[provider]`` in huxleyd.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.settings_schema import bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSettings:
    """Which realtime provider to talk to, and how.

    With no ``key_file`` (or ``kind = "sim"``) the daemon starts the built-in
    simulator on 127.0.0.1 and talks to that: a protocol peer, not an AI.
    """

    kind: Literal["openai", "sim"] = "openai"
    url: str = "wss://api.openai.com/v1/realtime"
    model: str = "gpt-realtime"
    voice: str = "marin"
    key_file: Path | None = None
    """A file holding the API key (mode 0600; under systemd a LoadCredential= path)."""
    connect_timeout_s: float = field(default=10.0, metadata=bounds(1.0, 120.0))
    ping_interval_s: float = field(default=20.0, metadata=bounds(5.0, 300.0))
    """Keepalive ping period on the websocket."""
    ping_timeout_s: float = field(default=30.0, metadata=bounds(5.0, 300.0))
    """How long a pong may take before the connection is deemed dead. Generous,
    so a slow pong on a busy link does not kill a healthy session."""
    transcription_model: str | None = None
    """Transcribe the user's speech (e.g. "gpt-4o-mini-transcribe") for the
    journal; None leaves input transcription off."""
    session_renew_s: float = field(default=25 * 60.0, metadata=bounds(60.0, 4 * 3600.0))
    """Renew the session (between turns) before the provider's session cap."""
    tool_timeout_s: float = field(default=8.0, metadata=bounds(0.5, 120.0))
    silent_response_timeout_s: float = field(default=6.0, metadata=bounds(0.5, 60.0))
    sim_scenario: Path | None = None
    """The simulator's scenario file (``kind = "sim"`` or no key)."""
    sim_speed: float = field(default=1.0, metadata=bounds(0.1, 100.0))
    """The simulator's audio pacing: 1.0 is real time."""
