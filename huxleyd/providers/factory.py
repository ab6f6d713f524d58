"""From ``[provider]`` settings to a running connection (the daemon's one call).

Layer: wiring. The only place that maps a provider ``kind`` to its core, so
the coordinator and the daemon never branch on provider names.
"""

from __future__ import annotations

from collections.abc import Callable

from huxleyd.providers.base import Capabilities, RealtimeProtocol
from huxleyd.providers.events import Event
from huxleyd.providers.openai_protocol import OpenAIRealtimeProtocol
from huxleyd.providers.settings import ProviderSettings
from huxleyd.providers.transport import ConnectionStatus, ProviderConnection


def create_protocol(settings: ProviderSettings) -> RealtimeProtocol:
    """The sans-I/O core for ``settings.kind``. The simulator speaks OpenAI GA."""
    if settings.kind in ("openai", "sim"):
        return OpenAIRealtimeProtocol(transcription_model=settings.transcription_model)
    raise ValueError(f"no provider core for kind {settings.kind!r}")  # pragma: no cover


def capabilities_of(settings: ProviderSettings) -> Capabilities:
    """What the configured provider can do, before connecting."""
    return create_protocol(settings).capabilities


def create_connection(
    settings: ProviderSettings,
    *,
    api_key: str | None,
    on_event: Callable[[Event], None],
    on_state: Callable[[ConnectionStatus], None] | None = None,
    url: str | None = None,
) -> ProviderConnection:
    """A :class:`ProviderConnection` for ``settings`` (not started: ``await conn.run()``).

    ``url`` overrides ``settings.url`` (the daemon passes the simulator's URL
    when it runs one). ``api_key`` comes from
    :func:`~huxleyd.providers.transport.read_api_key`; None sends no auth.
    """
    return ProviderConnection(
        create_protocol(settings),
        url=url or settings.url,
        model=settings.model,
        api_key=api_key,
        on_event=on_event,
        on_state=on_state,
        open_timeout_s=settings.connect_timeout_s,
        ping_interval_s=settings.ping_interval_s,
        ping_timeout_s=settings.ping_timeout_s,
    )
