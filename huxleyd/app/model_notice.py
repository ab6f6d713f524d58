"""A configured model near its announced shutdown, said at ``--check-config`` and at the start.

Layer: a small composition helper: the configuration's models
(:func:`~huxleyd.control.diagnose.configured_models`) against the lifecycle
table (:func:`~huxleyd.providers.models.shutdown_warnings`, the same
:data:`~huxleyd.providers.models.SHUTDOWN_WARN_DAYS` as ``doctor``). Never
fatal: the model works until its date; the admin is told what to use instead.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from huxleyd.config.load import Config
from huxleyd.control.diagnose import configured_models
from huxleyd.logs import get_logger
from huxleyd.providers.models import ShutdownWarning, shutdown_warnings

log = get_logger("huxleyd.daemon")


def model_shutdowns(config: Config, *, today: date | None = None) -> list[ShutdownWarning]:
    """The configured models whose shutdown is within the warning window (or past)."""
    return shutdown_warnings(configured_models(config), today=today or datetime.now(UTC).date())


def log_model_shutdowns(config: Config, *, today: date | None = None) -> None:
    """At the start: one WARNING line per model near (or past) its shutdown."""
    for warning in model_shutdowns(config, today=today):
        log.warning(
            "provider_model_shutdown_near",
            model=warning.model,
            shutdown=warning.shutdown.isoformat(),
            days_left=warning.days_left,
            replacement=warning.replacement,
            problem=warning.message(),
        )
