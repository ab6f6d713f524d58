"""From ``[provider]`` settings to a running connection (the daemon's one call).

Layer: wiring. The only place that maps a provider ``kind`` to its core, so
the coordinator and the daemon never branch on provider names. Also renders
the capability matrix (docs/providers.md is generated from it, and a test
fails when the committed page differs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from huxleyd.providers.base import Capabilities, ConnectionStatus, Session
from huxleyd.providers.connection_parts import Endpoint, SocketLimits, Timing
from huxleyd.providers.core import ConnectionCore
from huxleyd.providers.events import Event
from huxleyd.providers.gemini_core import GeminiLiveCore
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.retry import backoff_delays
from huxleyd.providers.settings import DIALECTS, KIND_DEFAULTS, Dialect, ProviderSettings
from huxleyd.providers.transport import ProviderConnection
from huxleyd.providers.xai_core import XaiRealtimeCore


def _cascade_capabilities() -> Capabilities:
    from huxleyd.providers.cascade.provider import CAPABILITIES

    return CAPABILITIES


MIN_PONG_WAIT_S: dict[str, float] = {"gemini": 60.0}
"""The least keepalive timeout per dialect: Gemini's pongs were measured at 8-30 s
in the field, so a 30 s timeout would close healthy sessions."""


def pong_wait_s(settings: ProviderSettings) -> float:
    """``ping_timeout_s``, raised to the dialect's floor (:data:`MIN_PONG_WAIT_S`)."""
    return max(settings.ping_timeout_s, MIN_PONG_WAIT_S.get(settings.dialect, 0.0))


VALID_KINDS = ("openai", "xai", "gemini", "sim", "cascade")
"""Every ``provider.kind``; ``sim`` runs the simulator in ``sim_dialect``."""


def create_core(settings: ProviderSettings) -> ConnectionCore:
    """The sans-I/O core for the settings' dialect (``kind``, or ``sim_dialect`` for sim)."""
    return protocol_for(settings.dialect, settings)


def protocol_for(dialect: Dialect, settings: ProviderSettings | None = None) -> ConnectionCore:
    """The core speaking ``dialect``; ValueError naming the valid ones otherwise."""
    if dialect not in DIALECTS:
        raise ValueError(f"no provider core for {dialect!r}; valid: {', '.join(DIALECTS)}")
    settings = settings or ProviderSettings(kind=dialect)
    if dialect == "openai":
        return OpenAIRealtimeCore(transcription_model=settings.transcription_model)
    if dialect == "xai":
        return XaiRealtimeCore()
    if dialect == "gemini":
        return GeminiLiveCore(
            model=settings.model,
            compression_trigger_tokens=settings.context_compression_trigger_tokens,
        )
    raise AssertionError(dialect)  # pragma: no cover - DIALECTS is checked above


def capabilities_of(settings: ProviderSettings) -> Capabilities:
    """What the configured provider can do, before connecting."""
    if settings.kind == "cascade":
        return _cascade_capabilities()
    return create_core(settings).capabilities


def create_connection(
    settings: ProviderSettings,
    *,
    api_key: str | None,
    on_event: Callable[[Event], None],
    on_state: Callable[[ConnectionStatus], None] | None = None,
    url: str | None = None,
    key_source: Callable[[], str | None] | None = None,
    backoff: Callable[[], Iterator[float]] | None = None,
) -> Session:
    """A :class:`~huxleyd.providers.base.Session` for ``settings`` (not started:
    ``await conn.run()``).

    ``kind = "cascade"`` gets a :class:`CascadeConnection` (HTTP + TTS stages,
    same commands and events); every other kind a websocket
    :class:`ProviderConnection`.

    ``url`` overrides ``settings.url`` (the daemon passes the simulator's URL
    when it runs one; the simulator must speak ``settings.dialect``).
    ``api_key`` comes from :func:`~huxleyd.providers.apikey.read_api_key`;
    None sends no auth. ``key_source`` (websocket providers) re-reads the key
    before every try, so a key fixed after a refusal is used without a restart.
    ``backoff``: the waits between tries (None: the daemon's 1, 3, 10, 30, 60 s).
    """
    if settings.kind == "cascade":
        from huxleyd.providers.cascade.factory import create_cascade_connection

        return create_cascade_connection(
            settings.cascade, api_key=api_key, on_event=on_event, on_state=on_state
        )
    return ProviderConnection(
        create_core(settings),
        Endpoint(
            url=url or settings.url, model=settings.model, api_key=api_key, key_source=key_source
        ),
        on_event=on_event,
        on_state=on_state,
        limits=SocketLimits(
            open_timeout_s=settings.connect_timeout_s,
            ping_interval_s=settings.ping_interval_s,
            ping_timeout_s=pong_wait_s(settings),
            stall_timeout_s=settings.stall_timeout_s,
        ),
        timing=Timing(backoff=backoff or backoff_delays),
    )


# ---------------------------------------------------------------- the matrix

MATRIX_START = "<!-- capability-matrix:start (generated by huxleyd.providers.factory) -->"
MATRIX_END = "<!-- capability-matrix:end -->"

_CAPABILITY_ROWS: dict[str, str] = {
    "text_input": "text turns (`huxleyctl say`)",
    "mid_session_instructions": "instructions change mid-session",
    "mid_session_tools": "tools change mid-session",
    "response_cancel": "the reply is cancelled on barge-in",
    "truncate": "the provider is told what was heard",
    "interrupt_acceptance": "a barge-in counts once",
    "input_rate_hz": "mic audio rate, Hz",
    "output_rate_hz": "speech audio rate, Hz",
    "verbatim_reader": "reads a text word for word, out of band",
}

_SETTING_ROWS: dict[str, str] = {
    "url": "default endpoint",
    "model": "default model",
    "voice": "default voice",
    "key_file": "suggested key file (unset: the simulator runs)",
}

_FALLBACKS: dict[str, str] = {
    "mid_session_instructions": "reconnect with the resumption handle; the conversation goes on",
    "mid_session_tools": "reconnect with the resumption handle; the conversation goes on",
    "response_cancel": "local cut: the speaker goes silent at once, the rest of the reply "
    "is dropped unheard, its tool calls get a cancelled output",
    "truncate": "the coordinator logs what was heard (`barge_in … heard_ms=`); "
    "the provider's history keeps the whole reply, so the core adds a short context "
    "note before the user's next turn saying how much of it was heard",
    "input_rate_hz": "the audio engine resamples the mic to the provider's rate",
    "verbatim_reader": "an in-conversation response told to read the text",
}


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"`{value}`" if not isinstance(value, int) else str(value)


def capability_matrix_markdown() -> str:
    """The Capabilities of every kind as a markdown table, then the fallbacks.

    Generated from the cores' own ``capabilities`` (and the cascade's):
    docs/providers.md holds exactly this text between :data:`MATRIX_START`
    and :data:`MATRIX_END` (:func:`with_matrix` puts it there; a test fails
    when it differs).
    """
    caps: dict[str, Capabilities] = {d: protocol_for(d).capabilities for d in DIALECTS}
    caps["cascade"] = _cascade_capabilities()
    kinds = list(caps)
    lines = [
        "| capability | meaning | " + " | ".join(kinds) + " |",
        "| --- | --- | " + " | ".join("---" for _ in kinds) + " |",
    ]
    for field in dataclasses.fields(Capabilities):
        cells = [_cell(getattr(caps[k], field.name)) for k in kinds]
        meaning = _CAPABILITY_ROWS.get(field.name, "")
        lines.append(f"| `{field.name}` | {meaning} | " + " | ".join(cells) + " |")
    for name, meaning in _SETTING_ROWS.items():
        cells = [f"`{getattr(KIND_DEFAULTS[d], name)}`" for d in DIALECTS]
        cells.append("`[provider.cascade]`")
        lines.append(f"| `{name}` | {meaning} | " + " | ".join(cells) + " |")
    lines += ["", "Where a capability is missing, the daemon falls back:", ""]
    names = {field.name for field in dataclasses.fields(Capabilities)}
    for name, fallback in _FALLBACKS.items():
        if name not in names:
            continue
        missing = [k for k in kinds if _missing(caps[k], name)]
        if missing:
            lines.append(f"- `{name}` ({', '.join(missing)}): {fallback}.")
    return "\n".join(lines) + "\n"


def with_matrix(page: str) -> str:
    """``page`` with the text between the matrix markers replaced by the current matrix."""
    head, start, rest = page.partition(MATRIX_START)
    _, end, tail = rest.partition(MATRIX_END)
    if not start or not end:
        raise ValueError(f"the page has no {MATRIX_START!r} … {MATRIX_END!r} block")
    return f"{head}{MATRIX_START}\n{capability_matrix_markdown()}{MATRIX_END}{tail}"


def _missing(caps: Capabilities, name: str) -> bool:
    value = getattr(caps, name)
    if isinstance(value, bool):
        return not value
    if name == "input_rate_hz":
        return bool(value != caps.output_rate_hz)
    return False
