"""The doctor's provider checks: the provider answers the key, the models live on.

:func:`check_provider` makes one authenticated request (the host answers,
the key is accepted, the model exists) at the :class:`ModelEndpoint`
:func:`model_endpoint` names; :func:`check_models` reads the configured
models against the announced shutdowns of :mod:`huxleyd.providers.models`.
Both return a :class:`~huxleyd.control.handler.DoctorCheck`, as the checks
of :mod:`~huxleyd.control.doctor` do, and never put the key in it. ::

    check_provider(model_endpoint("openai", url, "gpt-realtime", key))
    check_models(["gpt-realtime"], today=date.today())
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from huxleyd.control.handler import DoctorCheck

if TYPE_CHECKING:
    from huxleyd.providers.models import ShutdownWarning


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """One authenticated GET that proves the host answers, the key works and the model exists."""

    url: str
    headers: Mapping[str, str]
    model: str


def model_endpoint(kind: str, url: str, model: str, key: str) -> ModelEndpoint:
    """``GET /v1/models/{model}`` on the provider's HTTPS API (the realtime URL's host)."""
    parts = urlsplit(url)
    scheme = "https" if parts.scheme in ("wss", "https") else "http"
    host = parts.netloc
    if kind == "gemini":
        base = f"{scheme}://{host}/v1beta"
        return ModelEndpoint(f"{base}/models/{quote(model)}", {"x-goog-api-key": key}, model)
    if kind == "cascade":  # url is the chat model's OpenAI-compatible base URL
        base = url.rstrip("/")
        return ModelEndpoint(
            f"{base}/models/{quote(model)}", {"Authorization": f"Bearer {key}"}, model
        )
    base = f"{scheme}://{host}/v1"
    return ModelEndpoint(f"{base}/models/{quote(model)}", {"Authorization": f"Bearer {key}"}, model)


def check_provider(
    endpoint: ModelEndpoint | None, *, skipped_because: str = "", timeout_s: float = 10.0
) -> DoctorCheck:
    """One authenticated request: the host answers, the key is accepted, the model exists."""
    name = "provider"
    if endpoint is None:
        return DoctorCheck.skipped(name, skipped_because)
    where = urlsplit(endpoint.url).netloc
    request = urllib.request.Request(endpoint.url, headers=dict(endpoint.headers), method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            reply.read(65536)
            status = reply.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return DoctorCheck.failed(
            name,
            f"cannot reach {where}: {_one_line(reason)}",
            "check the network, DNS (`resolvectl status`) and provider.url",
        )
    if status in (401, 403):
        return DoctorCheck.failed(
            name,
            f"{where} refused the key (HTTP {status})",
            "put a valid API key in the key file (the provider's dashboard issues them)",
        )
    if status == 404:
        return DoctorCheck.failed(
            name,
            f"{where} accepted the key but has no model {endpoint.model!r} (HTTP 404)",
            "set provider.model to a model the provider offers (or remove it for the default)",
        )
    if status != 200:
        return DoctorCheck.failed(
            name, f"{where} answered HTTP {status}", "try again later; check the provider's status"
        )
    return DoctorCheck.passed(name, f"{where} accepted the key; model {endpoint.model!r} exists")


def check_models(
    models: Iterable[str], *, today: date, warn_days: int = 60, simulator: bool = False
) -> DoctorCheck:
    """The configured models (realtime, transcription, cascade stages) against
    the announced shutdowns in :mod:`huxleyd.providers.models`, ``warn_days``
    ahead (its ``SHUTDOWN_WARN_DAYS``, as ``--check-config`` and the start).

    A model the table does not know is reported as such, never passed: the
    table is the only thing looked at.
    """
    from huxleyd.providers.models import lifecycle, shutdown_warning

    names = [m for m in dict.fromkeys(models) if m]
    known = [m for m in names if lifecycle(m) is not None]
    unchecked = _models_unchecked(names, known, simulator=simulator)
    if unchecked is not None:
        return unchecked
    found = (shutdown_warning(m, today=today, within_days=warn_days) for m in known)
    warnings = [w for w in found if w is not None]
    also = _model_notes(known, [m for m in names if m not in known], warnings)
    if not warnings:
        return DoctorCheck.passed(
            "model",
            f"in use: {', '.join(names)}; no announced shutdown within {warn_days} days "
            f"for {', '.join(known)}{also}",
        )
    return _shutdown_check(warnings, also)


def _models_unchecked(names: list[str], known: list[str], *, simulator: bool) -> DoctorCheck | None:
    """Skipped when nothing can be checked: the simulator answers, no model is
    configured, or the table knows none of them. None: go on and check."""
    if simulator and names:
        return DoctorCheck.skipped(
            "model", f"not in use: the simulator answers ({', '.join(names)} is configured)"
        )
    if not names:
        return DoctorCheck.skipped(
            "model", "no model is configured (the built-in simulator answers)"
        )
    if not known:
        listed = ", ".join(repr(m) for m in names)
        return DoctorCheck.skipped(
            "model", f"no lifecycle known for {listed} (huxleyd.providers.models)"
        )
    return None


def _model_notes(known: list[str], unknown: list[str], warnings: list[ShutdownWarning]) -> str:
    """What the check adds as information, not a fault: a newer model the
    provider names (a model also due to shut down says so in its warning
    instead), and the models not in the table."""
    from huxleyd.providers.models import replacement_for

    warned = {w.model for w in warnings}
    newer = {m: replacement_for(m) for m in known if m.removeprefix("models/") not in warned}
    also = "".join(f"; a newer model exists for {m}: {n}" for m, n in newer.items() if n)
    return also + (f"; not in the table: {', '.join(unknown)}" if unknown else "")


def _shutdown_check(warnings: list[ShutdownWarning], also: str) -> DoctorCheck:
    """Failed once a model's shutdown date passed, else a warning; the fix
    names the first warning's replacement."""
    first = warnings[0]
    fix = (
        f"set the model to {first.replacement!r}"
        if first.replacement
        else "pick a current model (docs/providers.md, model lifecycle)"
    )
    detail = "; ".join(w.message() for w in warnings) + also
    if any(w.days_left < 0 for w in warnings):
        return DoctorCheck.failed("model", detail, fix)
    return DoctorCheck.warning("model", detail, fix)
