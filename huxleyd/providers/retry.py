"""Retry policy: a pure classifier and a backoff generator (conventions rule 7, docs/conventions.md).

Layer: pure functions. The transport loops over :func:`backoff_delays` and
asks :func:`classify` whether an error is worth another try.
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Callable, Iterator

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI


class Retry(enum.Enum):
    """What to do after a connection error."""

    RETRYABLE = "retryable"
    """Transient (network, server overload, a dropped socket): try again later."""
    FATAL = "fatal"
    """Trying again with the same settings will fail the same way (bad key, bad URL)."""


RETRYABLE = Retry.RETRYABLE
FATAL = Retry.FATAL

BACKOFF_S = (1.0, 3.0, 10.0, 30.0)
"""The first waits between tries, in seconds; then :data:`STEADY_BACKOFF_S` forever."""
STEADY_BACKOFF_S = 60.0

_RETRYABLE_STATUS = frozenset({408, 425, 429})
"""The 4xx answers worth another try (timeout, too early, rate limit); every 5xx is too."""


def retryable_status(status: int) -> bool:
    """An HTTP status at the handshake that a later try may not get (the one rule:
    :func:`classify` and :func:`huxleyd.providers.closes.handshake_verdict` both ask it)."""
    return status in _RETRYABLE_STATUS or status >= 500


def classify(exc: BaseException) -> Retry:
    """RETRYABLE or FATAL, from the exception alone.

    - HTTP 401/403 at the handshake (invalid or revoked key), other 4xx (wrong
      URL or model), a malformed URL: FATAL.
    - HTTP 408/425/429/5xx, network errors, timeouts, a closed or reset
      socket, a broken handshake: RETRYABLE.
    - Anything else (a bug, not the network): FATAL, so it is seen, not looped on.
    """
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        return RETRYABLE if retryable_status(status) else FATAL
    if isinstance(exc, InvalidURI):
        return FATAL
    if isinstance(exc, OSError | TimeoutError | EOFError | ConnectionClosed | InvalidHandshake):
        # ProviderConnectionError (a dropped session) is a ConnectionError, so an OSError.
        return RETRYABLE
    return FATAL


def backoff_delays(
    *, jitter: float = 0.1, rand: Callable[[], float] = random.random
) -> Iterator[float]:
    """1, 3, 10, 30 s, then 60 s forever, each stretched by up to ``jitter`` (a fraction).

    ``jitter=0`` gives the exact schedule (tests); the default spreads many
    devices that lost the network together so they do not return in step.
    """
    if not 0.0 <= jitter <= 1.0:
        raise ValueError(f"jitter must be a fraction between 0 and 1, got {jitter}")
    for base in BACKOFF_S:
        yield base * (1.0 + jitter * rand())
    while True:
        yield STEADY_BACKOFF_S * (1.0 + jitter * rand())


def being_cancelled() -> bool:
    """The running task has a cancel pending, so the error just caught is no
    reason to try again.

    A cancel that lands while a task group unwinds can come out as the
    children's errors instead (anyio raises their group; a client's
    ``__aexit__`` raises its failed disconnect): a retry loop that takes it
    for a broken peer reconnects, and the daemon's stop waits for ever."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


KEY_REFUSED_STATUS = frozenset({401, 403})
"""Handshake answers that mean "this key is not accepted" (invalid, revoked, no access)."""

KEY_POLL_S = 2.0
"""How often the key file is looked at while the key is missing or refused: a
key that comes back or changes is used within this long, without a signal."""
KEY_RETRY_S = 300.0
"""After the key was refused, try again this often (re-reading the key file each time)."""


def key_refused(exc: BaseException) -> bool:
    """The provider refused the API key at the handshake (HTTP 401/403).

    Not fatal for the daemon: the admin may fix the key file without a
    restart, so the connection retries slowly (:data:`KEY_RETRY_S`) and the
    device says why it cannot answer.
    """
    return isinstance(exc, InvalidStatus) and exc.response.status_code in KEY_REFUSED_STATUS


class ReconnectPolicy:
    """How long to wait before the next try, knowing a healthy session from a failed try.

    Pure bookkeeping over a backoff generator. A try that fails (refused,
    no answer, dropped before the session was ready) moves one step along
    the schedule; a session that became ready and later dropped is not a
    failure of the *connection*: the count and the schedule start over, so
    the next try waits the first delay again. ``failures`` counts the failed
    tries in a row (the transport reports OFFLINE from its fourth).
    """

    def __init__(self, backoff: Callable[[], Iterator[float]] = backoff_delays) -> None:
        self._backoff = backoff
        self._delays = backoff()
        self.failures = 0

    def attempt_failed(self) -> float:
        """A try failed: count it; the wait before the next one (seconds)."""
        self.failures += 1
        return next(self._delays)

    def session_ended(self, *, was_ready: bool) -> float:
        """A session ended on its own. Ready before it ended: start the schedule over."""
        if was_ready:
            self.failures = 0
            self._delays = self._backoff()
            return next(self._delays)
        return self.attempt_failed()

    def reset(self) -> None:
        """A deliberate reconnect (renewal): nothing failed."""
        self.failures = 0
        self._delays = self._backoff()
