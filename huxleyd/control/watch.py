"""What ``huxleyctl watch`` sees: the daemon's conversation as a stream of events.

Layer: asyncio only, no socket. :class:`~huxleyd.control.feedwriter.FeedWriter`
publishes the conversation into one :class:`EventFeed` (and
:class:`FeedLogTap` the journal events of :data:`LOGGED_EVENTS`); each
``watch`` client subscribes and gets every event from then on::

    feed = EventFeed(clock=clock)
    feed.publish("heard", turn="t3", text="what time is it")
    async for event in feed.subscribe():   # in the control server
        ...

Kinds (``fields`` in brackets):

==========  ===============================================================
watching    the first event of every subscription: from here on nothing is missed
state       the device's activity [``state``: idle, listening, thinking…]
connection  the provider connection [``state``, ``attempt``, ``retry_in_s``, ``detail``]
heard       what the user said, as the provider transcribed it [``text``, ``via``]
said        what the assistant said [``text``]
tool        a tool call [``name``, ``arguments``]
result      its result [``name``, ``output``, ``error``, ``side_effect``]
turn        a turn ended [``outcome``, ``tools``, ``source``]
media       a stream started, stopped, finished or was evicted [``action``, ``label``…]
volume      the user volume changed [``level``, ``by``]
notice      something the journal says an admin should see (offline, barge-in…)
mute        the microphone was muted or unmuted [``muted``]
==========  ===============================================================

Bound and drop policy: each subscriber holds at most :data:`MAX_QUEUED`
events; a subscriber that does not keep up loses the oldest, and the next
event it gets carries ``dropped`` (how many it lost). Publishing never
blocks and never fails; with no subscriber it costs one check.

Thread safety: :meth:`EventFeed.publish` may be called from any thread
(a log record may come from a worker thread); it hops to the loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from huxleyd.logs import EVENT_ATTR, FIELDS_ATTR

MAX_QUEUED = 256
"""Events one ``watch`` client may fall behind by before the oldest are dropped."""

MAX_TEXT_CHARS = 2000
"""Longer texts (a tool's output) are cut: watch is for reading, not for data."""

KINDS = (
    "watching",
    "state",
    "connection",
    "heard",
    "said",
    "tool",
    "result",
    "turn",
    "media",
    "volume",
    "notice",
    "mute",
    "announce",
)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One thing that happened. ``at`` is wall-clock UTC (ISO 8601), for people."""

    kind: str
    at: str
    turn: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    dropped: int = 0
    """Events this subscriber lost just before this one (it fell behind)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "at": self.at, "turn": self.turn}
        out.update(self.fields)
        if self.dropped:
            out["dropped"] = self.dropped
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WatchEvent:
        from huxleyd.control.errors import ControlProtocolError

        kind, at, turn = d.get("kind"), d.get("at"), d.get("turn")
        if not isinstance(kind, str) or not isinstance(at, str):
            raise ControlProtocolError(f"watch event: expected 'kind' and 'at' strings, got {d!r}")
        if turn is not None and not isinstance(turn, str):
            raise ControlProtocolError(f"watch event: 'turn' has the wrong type ({turn!r})")
        dropped = d.get("dropped", 0)
        rest = {k: v for k, v in d.items() if k not in ("kind", "at", "turn", "dropped")}
        return cls(kind, at, turn, rest, dropped if isinstance(dropped, int) else 0)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        return value[: MAX_TEXT_CHARS - 1] + "…"
    return value


class _Subscriber:
    def __init__(self) -> None:
        self.queue: collections.deque[WatchEvent] = collections.deque()
        self.dropped = 0
        self.wakeup = asyncio.Event()


class EventFeed:
    """Publish events to every current subscriber (``huxleyctl watch`` clients)."""

    def __init__(self, *, max_queued: int = MAX_QUEUED) -> None:
        self._subscribers: list[_Subscriber] = []
        self._max_queued = max_queued
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.published = 0

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def publish(self, kind: str, *, turn: str | None = None, **fields: Any) -> None:
        """Hand ``kind`` with ``fields`` to every subscriber. Never blocks, never raises."""
        if not self._subscribers:
            return
        event = WatchEvent(
            kind,
            _now(),
            turn,
            {k: _cut(v) for k, v in fields.items()},
        )
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            with contextlib.suppress(RuntimeError):  # closed: the daemon is stopping
                loop.call_soon_threadsafe(self._deliver, event)
            return
        self._deliver(event)

    def _deliver(self, event: WatchEvent) -> None:
        self.published += 1
        for sub in self._subscribers:
            if len(sub.queue) >= self._max_queued:
                sub.queue.popleft()
                sub.dropped += 1
            sub.queue.append(event)
            sub.wakeup.set()

    async def subscribe(self) -> AsyncGenerator[WatchEvent, None]:
        """Every event published from now on, until the caller stops iterating."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        sub = _Subscriber()
        self._subscribers.append(sub)
        try:
            # Says "subscribed": a client may now start a turn and miss nothing of it.
            yield WatchEvent("watching", _now(), None, {"clients": len(self._subscribers)})
            while True:
                while not sub.queue:
                    sub.wakeup.clear()
                    await sub.wakeup.wait()
                event = sub.queue.popleft()
                if sub.dropped:
                    event = WatchEvent(event.kind, event.at, event.turn, event.fields, sub.dropped)
                    sub.dropped = 0
                yield event
        finally:
            self._subscribers.remove(sub)


LOGGED_EVENTS: Mapping[str, tuple[str, dict[str, Any]]] = {
    # journal event → (watch kind, fixed fields)
    "media_started": ("media", {"action": "started"}),
    "media_stopped": ("media", {"action": "stopped"}),
    "media_finished": ("media", {"action": "finished"}),
    "media_evicted": ("media", {"action": "evicted"}),
    "volume_set": ("volume", {"by": "a tool"}),
    "volume_changed": ("volume", {}),
    "barge_in": ("notice", {"what": "barge-in: the answer was cut by {by}"}),
    "reply_cut": ("notice", {"what": "the answer was cut by {by}"}),
    "provider_offline": ("notice", {"what": "the provider is unreachable (offline)"}),
    "provider_back_online": ("notice", {"what": "the provider is back online"}),
    "response_silent": ("notice", {"what": "the model gave no answer"}),
    "response_failed": ("notice", {"what": "the answer failed"}),
    "response_retry": ("notice", {"what": "no answer yet: asked again"}),
    "provider_error": ("notice", {"what": "the provider reported an error"}),
    "tool_timeout": ("notice", {"what": "a tool did not answer in time"}),
    "tool_failed": ("notice", {"what": "a tool raised an error"}),
    "inject_dropped": ("notice", {"what": "a proactive announcement was dropped"}),
}
"""Journal events that also go to ``watch``: the runtime logs them already, so
the watcher sees exactly what the journal says, without a second code path
(and, like the journal, not below ``daemon.log_level``)."""


def _filled(text: Any, fields: Mapping[str, Any]) -> Any:
    """A fixed text with the logged fields it names (``cut by {by}``); a field the
    line did not log leaves the text as written, never an error in the log path."""
    if not isinstance(text, str) or "{" not in text:
        return text
    try:
        return text.format(**fields)
    except (KeyError, IndexError, ValueError):
        return text


class FeedLogTap(logging.Handler):
    """Forwards the journal events of :data:`LOGGED_EVENTS` to an :class:`EventFeed`.

    Installed on the ``huxleyd`` logger by the runtime; it sees the event
    name and fields the code logged (``log.info("media_started", label=…)``).
    """

    def __init__(self, feed: EventFeed) -> None:
        super().__init__(level=logging.DEBUG)
        self._feed = feed

    def emit(self, record: logging.LogRecord) -> None:
        if not self._feed.subscribers:
            return
        event = getattr(record, EVENT_ATTR, None)
        spec = LOGGED_EVENTS.get(event) if isinstance(event, str) else None
        if spec is None:
            return
        kind, fixed = spec
        fields = dict(getattr(record, FIELDS_ATTR, None) or {})
        turn = fields.pop("turn", None)
        fixed = {k: _filled(v, fields) for k, v in fixed.items()}
        self._feed.publish(
            kind,
            turn=turn if isinstance(turn, str) else None,
            **fixed,
            **{k: v for k, v in fields.items() if isinstance(v, str | int | float | bool)},
        )
