"""Provider settings (``[provider]`` in huxleyd.toml), with per-kind defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from huxleyd.providers.base import DIALECTS, Dialect
from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.models import DEFAULT_MODELS
from huxleyd.schema import bounds

ProviderKind = Literal["openai", "xai", "gemini", "sim", "cascade"]
"""What ``provider.kind`` may be. ``sim`` is the built-in simulator;
``cascade`` is recogniser → any chat model → speech (``[provider.cascade]``)."""

__all__ = [
    "DIALECTS",
    "KIND_DEFAULTS",
    "Dialect",
    "KindDefaults",
    "ProviderKind",
    "ProviderSettings",
]


@dataclass(frozen=True, slots=True)
class KindDefaults:
    """What a kind uses when ``url``, ``model`` or ``voice`` are left unset."""

    url: str
    model: str
    voice: str
    key_file: str
    """Where the installer and the docs suggest keeping this provider's key."""


KIND_DEFAULTS: dict[Dialect, KindDefaults] = {
    "openai": KindDefaults(
        url="wss://api.openai.com/v1/realtime",
        model=DEFAULT_MODELS["openai"],
        voice="marin",
        key_file="/etc/huxleyd/openai.key",
    ),
    "xai": KindDefaults(
        url="wss://api.x.ai/v1/realtime",
        model=DEFAULT_MODELS["xai"],
        voice="eve",
        key_file="/etc/huxleyd/xai.key",
    ),
    "gemini": KindDefaults(
        url="wss://generativelanguage.googleapis.com/ws/"
        "google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
        model=DEFAULT_MODELS["gemini"],
        voice="Puck",
        key_file="/etc/huxleyd/gemini.key",
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSettings:
    """Which realtime provider to talk to, and how.

    ``url``, ``model`` and ``voice`` default to the kind's own
    (:data:`KIND_DEFAULTS`); setting one to another kind's default (say the
    OpenAI URL with ``kind = "gemini"``) is refused at start, since it can
    only be a leftover. With no ``key_file`` (or ``kind = "sim"``) the daemon
    starts the built-in simulator on 127.0.0.1 and talks to that: a protocol
    peer, not an AI, speaking the kind's dialect (``sim_dialect`` for
    ``kind = "sim"``).
    """

    kind: ProviderKind = "openai"
    url: str = ""
    """The websocket endpoint; empty: the kind's default."""
    model: str = ""
    """Empty: the kind's default model."""
    voice: str = ""
    """Empty: the kind's default voice (a persona's voice wins over both)."""
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
    journal; None leaves input transcription off. OpenAI only: Gemini always
    transcribes, xAI has no such setting."""
    context_compression_trigger_tokens: int = field(default=0, metadata=bounds(0, 1_000_000))
    """Gemini: the context size (tokens) at which the server compresses the
    conversation with a sliding window; 0 leaves the server's default. The
    sliding window is always on, since without it audio sessions end at 15
    minutes."""
    session_renew_s: float = field(default=25 * 60.0, metadata=bounds(60.0, 4 * 3600.0))
    """Renew the session (between turns) before the provider's session cap."""
    stall_timeout_s: float = field(default=8.0, metadata=bounds(0.5, 120.0))
    """While a reply is due, a connection that delivers no complete frame for
    this long is stalled: dropped and tried again, the turn fails with the
    offline cue."""
    tool_timeout_s: float = field(default=8.0, metadata=bounds(0.5, 120.0))
    silent_response_timeout_s: float = field(default=6.0, metadata=bounds(0.5, 60.0))
    sim_scenario: Path | None = None
    """The simulator's scenario file (``kind = "sim"`` or no key)."""
    sim_speed: float = field(default=1.0, metadata=bounds(0.1, 100.0))
    """The simulator's audio pacing: 1.0 is real time."""
    sim_dialect: Dialect = "openai"
    """The protocol the simulator speaks when ``kind = "sim"`` (to try the
    xAI or Gemini code paths without a key)."""
    cascade: CascadeSettings = field(default_factory=CascadeSettings)
    """``[provider.cascade]``: recogniser, chat model and speech for ``kind = "cascade"``."""

    def __post_init__(self) -> None:
        if self.kind == "cascade":
            return  # url/model/voice are unused: [provider.cascade] names its endpoints
        own = KIND_DEFAULTS[self.dialect]
        for name in ("url", "model", "voice"):
            value = getattr(self, name)
            if not value:
                object.__setattr__(self, name, getattr(own, name))
                continue
            for other, defaults in KIND_DEFAULTS.items():
                if other != self.dialect and value == getattr(defaults, name) != getattr(own, name):
                    raise ValueError(
                        f"provider.{name} = {value!r} is the {other} default, but kind is "
                        f"{self.kind!r}: remove provider.{name} to use {getattr(own, name)!r}"
                    )

    @property
    def dialect(self) -> Dialect:
        """The wire protocol: the kind itself, or ``sim_dialect`` for the simulator."""
        if self.kind == "cascade":
            raise ValueError("kind = 'cascade' has no realtime dialect")
        return self.sim_dialect if self.kind == "sim" else self.kind
