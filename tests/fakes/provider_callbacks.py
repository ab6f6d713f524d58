"""A recording consumer of a provider connection's callbacks (websocket or cascade).

Pass ``on_event=recorder.on_event`` (or the recorder itself) and
``on_state=recorder.on_state``; read what arrived, or wait for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.providers.connection_parts import Endpoint, SocketLimits, Timing
from huxleyd.providers.core import ConnectionCore
from huxleyd.providers.events import AudioChunk, Event, ResponseDone, ToolCall
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.providers.retry import backoff_delays
from huxleyd.providers.transport import ProviderConnection

E = TypeVar("E")


class Recorder:
    """Keeps every event and state report, and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.states: list[ConnectionStatus] = []
        self.forward: Callable[[Event], None] | None = None
        """Also hand each event on (to a coordinator)."""
        self._changed = asyncio.Event()

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()
        if self.forward is not None:
            self.forward(event)

    __call__ = on_event

    def on_state(self, status: ConnectionStatus) -> None:
        self.states.append(status)
        self._changed.set()

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def state_names(self) -> list[ConnectionState]:
        return [s.state for s in self.states]

    def names(self) -> list[str]:
        """Event type names, consecutive AudioChunks folded into one."""
        out: list[str] = []
        for event in self.events:
            name = type(event).__name__
            if not (name == "AudioChunk" and out and out[-1] == name):
                out.append(name)
        return out

    def audio(self, response_id: str | None = None) -> bytes:
        """The PCM of every AudioChunk (of ``response_id`` only, if given)."""
        return b"".join(c.pcm for c in self.of(AudioChunk) if response_id in (None, c.response_id))

    def done(self) -> list[ResponseDone]:
        return self.of(ResponseDone)

    def calls(self) -> list[ToolCall]:
        return self.of(ToolCall)

    def connection(
        self,
        url: str,
        *,
        core: ConnectionCore | None = None,
        model: str = "gpt-realtime",
        api_key: str | None = "sk-test",
        key_source: Callable[[], str | None] | None = None,
        **parts: Any,
    ) -> ProviderConnection:
        """A connection to ``url`` that reports to this recorder (an OpenAI core
        unless ``core``; the backoff without jitter, so delays can be compared).

        ``parts`` are fields of :class:`SocketLimits` and :class:`Timing`
        (``sleep=``, ``stall_timeout_s=``…), each handed to its part."""
        parts.setdefault("backoff", lambda: backoff_delays(jitter=0))
        limits = {k: parts.pop(k) for k in list(parts) if k in SocketLimits.__dataclass_fields__}
        timing = {k: parts.pop(k) for k in list(parts) if k in Timing.__dataclass_fields__}
        assert not parts, f"not a part of a connection: {sorted(parts)}"
        return ProviderConnection(
            core or OpenAIRealtimeCore(),
            Endpoint(url=url, model=model, api_key=api_key, key_source=key_source),
            on_event=self.on_event,
            on_state=self.on_state,
            limits=SocketLimits(**limits),
            timing=Timing(**timing),
        )

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def wait_for(self, kind: type[E], count: int = 1) -> E:
        """The ``count``-th event of type ``kind`` (waiting for it)."""
        await self.wait_until(lambda: len(self.of(kind)) >= count)
        return self.of(kind)[count - 1]
