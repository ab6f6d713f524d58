"""What a session's end means, per provider: retry, renew, or give up (and why).

Layer: pure functions, no I/O. The transport asks the core for a
:class:`CloseVerdict` after every connection that ended without us closing
it (``close_verdict``, declared by every core:
:class:`~huxleyd.providers.core.ConnectionCore`); each core answers with the function of its
provider below, from the close code and reason the server sent, whether the
session had become ready, and what the core saw before the close (an error
event, a ``goAway``, a refused resumption handle).

- RETRY: transient; the transport waits its backoff and tries again.
- RENEW: the provider ended the session on purpose (a session cap, a
  ``goAway``, a refused handle): reconnect now, without counting a failure.
- FATAL: the same settings will fail the same way (key, model, setup
  refused): the transport stops with ``reason`` (an :class:`EndReason`) and
  the log says what to change. What the device plays for it is the turn
  layer's choice (:func:`huxleyd.turns.cues.failure_cue`): a provider says
  why a session ended, never what the user hears.

docs/providers.md has the same table in words, per provider.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from huxleyd.providers.base import EndReason
from huxleyd.providers.models import replacement_for
from huxleyd.providers.retry import retryable_status


class CloseAction(enum.StrEnum):
    RETRY = "retry"
    RENEW = "renew"
    FATAL = "fatal"


@dataclass(frozen=True, slots=True)
class CloseVerdict:
    """What to do after a session ended, and the words for the log."""

    action: CloseAction
    reason: EndReason
    """Why, for the journal and the turn layer (``model_refused``, ``session_cap``…)."""
    detail: str = ""
    """What the server said, and for FATAL what to change."""


GOING_AWAY = 1001
NO_CLOSE_FRAME = 1006


def retry(reason: EndReason, detail: str = "") -> CloseVerdict:
    return CloseVerdict(CloseAction.RETRY, reason, detail)


def renew(reason: EndReason, detail: str = "") -> CloseVerdict:
    return CloseVerdict(CloseAction.RENEW, reason, detail)


def fatal(reason: EndReason, detail: str) -> CloseVerdict:
    return CloseVerdict(CloseAction.FATAL, reason, detail)


def _model_hint(model: str) -> str:
    instead = replacement_for(model)
    if instead:
        return f"set provider.model = {instead!r} (or remove it to use the default)"
    return "set provider.model to a model the provider serves (or remove it)"


# ---------------------------------------------------------------- OpenAI and xAI

OPENAI_SESSION_CAP_S = 60 * 60
"""OpenAI Realtime sessions last at most 60 minutes (``session_expired``, then close)."""

_KEY_CODES = frozenset({"invalid_api_key", "unauthorized", "authentication_error"})
_MODEL_CODES = frozenset({"model_not_found", "invalid_model"})


def openai_close(
    code: int | None, reason: str, *, ready: bool, ended_by: str | None, model: str
) -> CloseVerdict:
    """OpenAI Realtime (and xAI's dialect of it). ``ended_by``: the code of the
    session-ending ``error`` event received before the close, if any."""
    said = f"close {code}: {reason}".strip(": ") if code is not None else "no close frame"
    if ended_by == "session_expired":
        return renew(EndReason.SESSION_CAP, said)
    if ended_by in _KEY_CODES:
        return fatal(EndReason.KEY_REFUSED, f"{ended_by}: check provider.key_file")
    if ended_by in _MODEL_CODES:
        return fatal(EndReason.MODEL_REFUSED, f"{ended_by} ({model!r}): {_model_hint(model)}")
    if ended_by == "insufficient_quota":
        return fatal(
            EndReason.QUOTA_EXHAUSTED, "insufficient_quota: the account has no credit left"
        )
    if code == GOING_AWAY and ready:
        # The server ended a working session (its cap, a restart): a fresh one
        # now. Before the session was ready it is a failed try, with backoff,
        # so a server that keeps going away is not hammered.
        return renew(EndReason.SERVER_GOING_AWAY, said)
    return retry(EndReason.CONNECTION_LOST, said)


# ---------------------------------------------------------------- Gemini

NOT_FOUND_FOR_NOW = EndReason.NOT_FOUND_FOR_NOW
"""The reason of a RETRY verdict for a generic "not found" before the setup completed."""

GEMINI_AUDIO_SESSION_CAP_S = 15 * 60
"""Gemini Live audio sessions without context window compression end at 15 minutes."""
GEMINI_CONNECTION_CAP_S = 10 * 60
"""A Gemini Live connection lasts about 10 minutes (``goAway`` first); resume to go on."""

_MODEL_REFUSALS = (
    "is not found",
    "not found for api version",
    "not supported for bidigeneratecontent",
)
"""The server named the model as unknown for this API: a refusal, whatever the code."""
_MAYBE_TRANSIENT_NOT_FOUND = "requested entity was not found"
"""Google's generic NOT_FOUND: public reports see it pass on a retry, so it is a
model refusal only once it came :data:`NOT_FOUND_RETRIES` + 1 times in a row."""
NOT_FOUND_RETRIES = 2
_KEY_REFUSALS = ("api key", "api_key", "permission denied", "unauthenticated")
_TRANSIENT_1008 = ("not implemented, or supported, or enabled",)


def gemini_close(
    code: int | None,
    reason: str,
    *,
    ready: bool,
    resumed: bool,
    go_away: bool,
    model: str,
    not_found_before: int = 0,
) -> CloseVerdict:
    """Gemini Live reports errors only as close codes (1007, 1008, 1011…).

    ``resumed``: this connection's setup carried a resumption handle;
    ``go_away``: the server sent ``goAway`` before closing;
    ``not_found_before``: how many tries in a row before this one ended in a
    generic "Requested entity was not found" before the setup completed.
    """
    said = f"close {code}: {reason}".strip(": ") if code is not None else "no close frame"
    text = reason.lower()
    if go_away or (code == GOING_AWAY and ready):
        return renew(EndReason.GO_AWAY, said)
    if code in (1007, 1008) and any(k in text for k in _KEY_REFUSALS):
        return fatal(EndReason.KEY_REFUSED, f"{said}: check provider.key_file")
    if not ready and code in (1007, 1008):
        if resumed:
            # The handle may have expired (they live about two hours): start fresh.
            return renew(EndReason.RESUMPTION_REFUSED, said)
        if code == 1008 and any(k in text for k in _TRANSIENT_1008):
            return retry(EndReason.SERVER_REFUSED_FOR_NOW, said)
        if any(k in text for k in _MODEL_REFUSALS):
            # 1008, or 1007 (INVALID_ARGUMENT: "… not found for API version …").
            return fatal(EndReason.MODEL_REFUSED, f"{said}: {_model_hint(model)}")
        if _MAYBE_TRANSIENT_NOT_FOUND in text:
            if not_found_before < NOT_FOUND_RETRIES:
                return retry(NOT_FOUND_FOR_NOW, said)
            return fatal(
                EndReason.MODEL_REFUSED,
                f"{said} ({not_found_before + 1} times): {_model_hint(model)}",
            )
        # The setup itself was refused: it will be refused again.
        return fatal(EndReason.SETUP_REFUSED, f"{said}: the setup for {model!r} was refused")
    if code == 1011 or code == 1013:
        return retry(EndReason.SERVER_ERROR, said)
    return retry(EndReason.CONNECTION_LOST, said)


# ---------------------------------------------------------------- the handshake


def handshake_verdict(status: int) -> CloseVerdict:
    """An HTTP status refusing the websocket handshake (every provider alike:
    OpenAI, xAI and Gemini all answer a bad key, URL or request before the
    upgrade). Retry or not is :func:`huxleyd.providers.retry.retryable_status`,
    the rule :func:`~huxleyd.providers.retry.classify` follows too."""
    said = f"HTTP {status} at the handshake"
    if status in (401, 403):
        return fatal(
            EndReason.KEY_REFUSED, f"{said}: check provider.key_file (the key was refused)"
        )
    if status == 404:
        return fatal(EndReason.NOT_FOUND, f"{said}: check provider.url and provider.model")
    if status == 429:
        return retry(EndReason.RATE_LIMITED, said)
    if retryable_status(status):
        return retry(EndReason.SERVER_ERROR, said)
    return fatal(EndReason.REQUEST_REFUSED, f"{said}: check the [provider] settings")
