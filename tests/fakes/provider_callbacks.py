"""A recording consumer of a ProviderConnection's callbacks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.providers.events import Event

E = TypeVar("E")


class Recorder:
    """Keeps every event and state report, and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.states: list[ConnectionStatus] = []
        self._changed = asyncio.Event()

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    def on_state(self, status: ConnectionStatus) -> None:
        self.states.append(status)
        self._changed.set()

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def state_names(self) -> list[ConnectionState]:
        return [s.state for s in self.states]

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def wait_for(self, kind: type[E], count: int = 1) -> E:
        """The ``count``-th event of type ``kind`` (waiting for it)."""
        await self.wait_until(lambda: len(self.of(kind)) >= count)
        return self.of(kind)[count - 1]
