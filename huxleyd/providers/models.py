"""Model lifecycle: the default models per provider and their announced shutdowns.

Layer: pure data and pure functions (no clock: the caller passes today's
date). ``doctor`` asks :func:`shutdown_warning` whether the configured model
is within N days of its shutdown; the provider start names the replacement
from :func:`replacement_for` when the server refuses a model.

A date here is an *announced* shutdown date, copied from the provider's own
publication (cited beside each entry). ``None`` means no date has been
announced in those sources, not that the model lives forever: preview
models in particular may be retired with short notice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from huxleyd.providers.base import Dialect


@dataclass(frozen=True, slots=True)
class ModelLifecycle:
    """One model: who serves it, when it shuts down (if announced), what replaces it."""

    provider: str
    """``openai``, ``xai``, ``gemini`` or ``cascade`` (the cascade's OpenAI stages)."""
    model: str
    shutdown: dt.date | None
    """The announced shutdown date; None: none announced in the cited sources."""
    replacement: str | None
    """The provider's recommended replacement or named successor, where it names
    one (a model with no shutdown may still have one: ``doctor`` says so)."""
    source: str
    """Where the date comes from."""


_OPENAI_SDK = "openai 3.57 package, types/realtime (model docstrings: 'Deprecated values')"
_OPENAI_SDK_CHAT = "openai 3.57 package, types/shared/chat_model.py ('Deprecated values')"
_OPENAI_SDK_ASR = "openai 3.57 package, types/realtime/audio_transcription.py"
_OPENAI_DEPRECATIONS = "OpenAI deprecations page (developers.openai.com/api/docs/deprecations)"
_OPENAI_REALTIME_NEXT = (
    f"{_OPENAI_SDK}; replacement: {_OPENAI_DEPRECATIONS}, gpt-realtime -> gpt-realtime-2.1"
)
_OPENAI_ASR_NEXT = (
    f"{_OPENAI_SDK_ASR}; replacement: {_OPENAI_DEPRECATIONS} ('gpt-live-transcribe or"
    " gpt-transcribe'; gpt-transcribe for committed turns, OpenAI cookbook"
    " migrating_from_whisper_to_gpt_transcribe)"
)
_OPENAI_CHAT_NEXT = f"{_OPENAI_SDK_CHAT}; replacement: {_OPENAI_DEPRECATIONS} (gpt-6-luna)"
_GEMINI_DEPRECATIONS = "Gemini API deprecations page (ai.google.dev/gemini-api/docs/deprecations)"
_GEMINI_31_PAGE = (
    "ai.google.dev/gemini-api/docs/models/gemini-3.1-flash-live-preview"
    " ('Migrating from gemini-2.5-flash-native-audio-preview-12-2025')"
)
_GEMINI_38_PAGE = (
    "ai.google.dev/gemini-api/docs/models/gemini-3.8-live (stable, September 2026;"
    " 'Migrating from gemini-3.1-flash-live-preview'); released 2026-09-15 per "
    + _GEMINI_DEPRECATIONS
)
_XAI_MODELS = "docs.x.ai/developers/models/grok-voice-think-fast-2.0 (alias grok-voice-latest)"
_XAI_VOICE_REST = (
    "xAI REST reference, Realtime (docs.x.ai/developers/rest-api-reference/inference/voice):"
    " model 'default: grok-voice-fast-1.0 ... For the best experience, use"
    " grok-voice-think-fast-1.0'; listed as deprecated ('Legacy voice model') by"
    " docs.litellm.ai/docs/providers/xai_realtime; no shutdown date announced"
)
_XAI_VOICE_3 = (
    "Vercel AI Gateway's model page (vercel.com/ai-gateway/models/grok-voice-3.0: xAI's"
    " realtime speech-to-speech model, reasoning on by default), pointing to"
    " docs.x.ai/developers/models/grok-voice-3.0, which we could not read"
)

MODELS: tuple[ModelLifecycle, ...] = (
    # OpenAI Realtime: the SDK's session model docstring lists these as deprecated.
    ModelLifecycle(
        "openai", "gpt-realtime", dt.date(2027, 1, 20), "gpt-realtime-2.1", _OPENAI_REALTIME_NEXT
    ),
    ModelLifecycle(
        "openai",
        "gpt-realtime-2025-08-28",
        dt.date(2027, 1, 20),
        "gpt-realtime-2.1",
        _OPENAI_REALTIME_NEXT,
    ),
    ModelLifecycle(
        "openai",
        "gpt-realtime-mini",
        dt.date(2027, 1, 20),
        "gpt-realtime-2.1-mini",
        f"{_OPENAI_SDK}; replacement: {_OPENAI_DEPRECATIONS}",
    ),
    ModelLifecycle(
        "openai",
        "gpt-realtime-mini-2025-12-15",
        dt.date(2027, 1, 20),
        "gpt-realtime-2.1-mini",
        f"{_OPENAI_SDK}; replacement: {_OPENAI_DEPRECATIONS}",
    ),
    ModelLifecycle("openai", "gpt-realtime-2.1", None, None, _OPENAI_SDK),
    ModelLifecycle("openai", "gpt-realtime-2.1-mini", None, None, _OPENAI_SDK),
    # Input transcription (OpenAI realtime) and the cascade's recogniser.
    ModelLifecycle(
        "openai", "gpt-4o-mini-transcribe", dt.date(2027, 2, 26), "gpt-transcribe", _OPENAI_ASR_NEXT
    ),
    ModelLifecycle(
        "openai", "gpt-4o-transcribe", dt.date(2027, 2, 26), "gpt-transcribe", _OPENAI_ASR_NEXT
    ),
    ModelLifecycle("openai", "whisper-1", dt.date(2027, 2, 26), "gpt-transcribe", _OPENAI_ASR_NEXT),
    ModelLifecycle("openai", "gpt-transcribe", None, None, _OPENAI_SDK_ASR),
    ModelLifecycle("openai", "gpt-live-transcribe", None, None, _OPENAI_SDK_ASR),
    # The cascade's chat model: the old default, and today's.
    ModelLifecycle("cascade", "gpt-4o-mini", dt.date(2027, 1, 14), "gpt-6-luna", _OPENAI_CHAT_NEXT),
    ModelLifecycle("cascade", "gpt-5.4-mini", None, None, _OPENAI_SDK_CHAT),
    ModelLifecycle("cascade", "gpt-4o", dt.date(2027, 1, 14), "gpt-6-luna", _OPENAI_CHAT_NEXT),
    ModelLifecycle("cascade", "gpt-6-luna", None, None, _OPENAI_SDK_CHAT),
    # Gemini Live: both older Live models were shut down on 2025-12-09; the
    # deprecations page names the 12-2025 preview, whose own successors follow.
    ModelLifecycle(
        "gemini",
        "gemini-live-2.5-flash-preview",
        dt.date(2025, 12, 9),
        "gemini-2.5-flash-native-audio-preview-12-2025",
        _GEMINI_DEPRECATIONS,
    ),
    ModelLifecycle(
        "gemini",
        "gemini-2.0-flash-live-001",
        dt.date(2025, 12, 9),
        "gemini-2.5-flash-native-audio-preview-12-2025",
        _GEMINI_DEPRECATIONS,
    ),
    ModelLifecycle(
        "gemini",
        "gemini-2.5-flash-native-audio-preview-12-2025",
        None,
        "gemini-3.1-flash-live-preview",
        _GEMINI_31_PAGE,
    ),
    ModelLifecycle(
        "gemini", "gemini-3.1-flash-live-preview", None, "gemini-3.8-live", _GEMINI_38_PAGE
    ),
    ModelLifecycle("gemini", "gemini-3.8-live", None, None, _GEMINI_38_PAGE),
    # xAI publishes no lifecycle dates for its voice models in the sources we have.
    ModelLifecycle(
        "xai", "grok-voice-think-fast-1.0", None, "grok-voice-think-fast-2.0", _XAI_MODELS
    ),
    ModelLifecycle("xai", "grok-voice-think-fast-2.0", None, None, _XAI_MODELS),
    # Deprecated, no date: doctor names the model to move to.
    ModelLifecycle(
        "xai", "grok-voice-fast-1.0", None, "grok-voice-think-fast-1.0", _XAI_VOICE_REST
    ),
    # Known to exist; not the default (docs/providers.md, "Model lifecycle", says why).
    ModelLifecycle("xai", "grok-voice-3.0", None, None, _XAI_VOICE_3),
)

SHUTDOWN_WARN_DAYS = 60
"""``--check-config``, the start and ``doctor`` warn this long before a
configured model's announced shutdown (and name what to use instead)."""

DEFAULT_MODELS: dict[Dialect, str] = {
    # The current GA realtime model (the openai package's newest; gpt-realtime,
    # its predecessor, shuts down on 2027-01-20).
    "openai": "gpt-realtime-2.1",
    # Pinned, not the alias grok-voice-latest: an alias moves under a running
    # device (voice, tool habits) without anyone changing its configuration.
    "xai": "grok-voice-think-fast-2.0",
    # Generally available (stable) since 2026-09-15 and Google's stated
    # default for low-latency voice agents; it replaces the two previews
    # (gemini-3.1-flash-live-preview, and the 12-2025 native-audio preview
    # before it), which may be retired at short notice.
    "gemini": "gemini-3.8-live",
}
"""What each realtime kind uses when ``provider.model`` is unset (settings read this)."""

_BY_NAME = {entry.model: entry for entry in MODELS}


def lifecycle(model: str) -> ModelLifecycle | None:
    """The table's entry for ``model`` (a ``models/`` prefix is ignored); None if unknown."""
    return _BY_NAME.get(model.removeprefix("models/"))


def replacement_for(model: str) -> str | None:
    """The newest model the provider's chain of named replacements leads to from
    ``model`` (what to configure instead); None when it names none."""
    seen = {model.removeprefix("models/")}
    entry = lifecycle(model)
    newest = None
    while entry is not None and entry.replacement and entry.replacement not in seen:
        newest = entry.replacement
        seen.add(newest)
        entry = lifecycle(newest)
    return newest


@dataclass(frozen=True, slots=True)
class ShutdownWarning:
    """A configured model whose announced shutdown is near or past."""

    model: str
    shutdown: dt.date
    days_left: int
    """Negative once the date has passed."""
    replacement: str | None
    source: str

    def message(self) -> str:
        """One line for doctor and the log."""
        when = (
            f"was shut down on {self.shutdown.isoformat()}"
            if self.days_left < 0
            else f"shuts down on {self.shutdown.isoformat()} ({self.days_left} days)"
        )
        instead = f"; use {self.replacement!r}" if self.replacement else ""
        return f"model {self.model!r} {when}{instead} (source: {self.source})"


def shutdown_warnings(
    models: Iterable[str], *, today: dt.date, within_days: int = SHUTDOWN_WARN_DAYS
) -> list[ShutdownWarning]:
    """The warnings of :func:`shutdown_warning` for each of ``models`` (once each)."""
    found = (
        shutdown_warning(m, today=today, within_days=within_days) for m in dict.fromkeys(models)
    )
    return [w for w in found if w is not None]


def shutdown_warning(model: str, *, today: dt.date, within_days: int) -> ShutdownWarning | None:
    """A warning when ``model``'s announced shutdown is within ``within_days`` of ``today``
    (or already past); None when it is further away, unannounced or unknown."""
    if within_days < 0:
        raise ValueError(f"within_days must be >= 0, got {within_days}")
    entry = lifecycle(model)
    if entry is None or entry.shutdown is None:
        return None
    days_left = (entry.shutdown - today).days
    if days_left > within_days:
        return None
    return ShutdownWarning(
        entry.model, entry.shutdown, days_left, replacement_for(entry.model), entry.source
    )
