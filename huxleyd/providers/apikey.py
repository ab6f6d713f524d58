"""The provider's API key: read from its file, and waited for when refused or missing.

Layer: adapter (the file system, asyncio). :func:`read_api_key` is how the
start, the cascade's stages and ``huxleyctl doctor`` read a key file (its
format is :mod:`huxleyd.providers.keyfile`). :class:`KeyKeeper` is the key
a :class:`~huxleyd.providers.transport.ProviderConnection` sends: re-read
before every try when the file is the source, and the two waits of the
connection's key states: KEY_REFUSED (the provider said no) and KEY_MISSING
(the file is gone, empty or unreadable).
"""

from __future__ import annotations

import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

from huxleyd.errors import ConfigError
from huxleyd.logs import EventLogger, get_logger
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.providers.connection_parts import Endpoint, Timing
from huxleyd.providers.keyfile import parse_key


def read_api_key(path: Path, *, key: str = "provider.key_file") -> str:
    """The API key in ``path`` (one token, see :func:`huxleyd.providers.keyfile.parse_key`).
    Never log the result.

    Raises :class:`~huxleyd.errors.ConfigError` naming the file when it is
    missing, unreadable, empty or not one token. Warns when others may read
    it, and when a byte order mark was stripped.
    """
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(str(path), key, f"cannot read the API key file ({exc.strerror})") from exc
    parsed = parse_key(data, file=str(path), key=key)
    logger = get_logger("huxleyd.providers")
    if parsed.had_bom:
        logger.warning(
            "api_key_file_bom_stripped",
            file=str(path),
            detail="the file starts with a UTF-8 byte order mark; save it as plain text",
        )
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        logger.warning("api_key_file_readable_by_others", file=str(path), mode=oct(mode & 0o777))
    return parsed.token


class KeyKeeper:
    """The key a connection sends, and how it waits for a better one.

    ``report`` and ``log`` are the connection's; ``pause(s)`` sleeps unless the
    connection is closed meanwhile, and ``stopping()`` says it is.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        timing: Timing,
        *,
        log: EventLogger,
        report: Callable[[ConnectionStatus], None],
        pause: Callable[[float], Awaitable[None]],
        stopping: Callable[[], bool],
    ) -> None:
        self._url = endpoint.url
        self.key = endpoint.api_key
        """What the next try sends (never log it)."""
        self._source = endpoint.key_source
        self._retry_s = timing.key_retry_s
        self._poll_s = timing.key_poll_s
        self._log = log
        self._report = report
        self._pause = pause
        self._stopping = stopping

    def refresh(self) -> None:
        """Re-read the key before a try (ConfigError when the file is gone or empty)."""
        if self._source is not None:
            self.key = self._source()

    async def wait_after_refusal(self, detail: str) -> None:
        """The provider refused the key: wait ``key_retry_s``, or less when the
        key file changes (looked at every ``key_poll_s``)."""
        self._report(
            ConnectionStatus(ConnectionState.KEY_REFUSED, retry_in_s=self._retry_s, detail=detail)
        )
        self._log.error(
            "provider_key_refused",
            url=self._url,
            problem=detail,
            retry_in_s=self._retry_s,
            hint="put a valid API key in the key file; a changed key is used within seconds",
        )
        refused = self.key
        poll_s = self._poll_s if self._source is not None else self._retry_s
        waited = 0.0
        while waited < self._retry_s and not self._stopping():
            step = min(poll_s, self._retry_s - waited)
            await self._pause(step)
            waited += step
            if self._source is not None and self._read_quietly() not in (None, refused):
                self._log.info("provider_key_changed", detail="the key file changed: trying it")
                return

    async def wait_for_file(self, exc: ConfigError) -> None:
        """No key to send (the file is gone, empty or unreadable): KEY_MISSING, and
        the file is looked at every ``key_poll_s`` until it holds a key again."""
        self._report(ConnectionStatus(ConnectionState.KEY_MISSING, detail=exc.problem))
        self._log.error(
            "provider_key_missing",
            file=exc.file,
            problem=exc.problem,
            hint="put the API key back in the file; it is used within seconds of being there",
        )
        while not self._stopping():
            await self._pause(self._poll_s)
            if self._read_quietly() is not None:
                self._log.info("provider_key_back", file=exc.file)
                return

    def _read_quietly(self) -> str | None:
        """The key file's token now, or None when it cannot be read (no log line)."""
        if self._source is None:
            return None
        try:
            return self._source()
        except ConfigError:
            return None
