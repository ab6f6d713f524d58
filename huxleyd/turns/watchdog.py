"""The silent-response watchdog: a reply was asked for and nothing came.

Armed when the coordinator requests a response; disarmed by the first audio
chunk or tool call, or when the response ends. If it fires, the coordinator
retries (or gives up with an earcon): a provider that silently dropped a
``response.create`` would otherwise leave the user waiting forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class SilenceWatchdog:
    """One timer at a time; arming again restarts it."""

    def __init__(self, timeout_s: float, *, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None

    @property
    def armed(self) -> bool:
        return self._task is not None

    def arm(self, on_silent: Callable[[], None]) -> None:
        self.disarm()
        self._task = asyncio.get_running_loop().create_task(
            self._wait(on_silent), name="silent-response-watchdog"
        )

    def disarm(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _wait(self, on_silent: Callable[[], None]) -> None:
        await self._sleep(self.timeout_s)
        self._task = None
        on_silent()
