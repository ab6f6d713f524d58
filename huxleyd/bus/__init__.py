"""The one way a part tells others what happened: a typed, synchronous bus.

Layer: a leaf (it imports only :mod:`huxleyd.logs`). The session publishes its
provider events (:mod:`huxleyd.providers.events`) on one; the coordinator
publishes the turn's news (:mod:`huxleyd.turns.news`) on another. Whoever
wants to know subscribes once, at wiring time: the coordinator, the
``huxleyctl watch`` feed, the LEDs, systemd's status line::

    bus: Bus[TurnNews] = Bus(log, failed="turn_news_handler_failed")
    bus.subscribe(leds.follow)
    bus.publish(ActivityChanged(Activity.LISTENING))

Contract: :meth:`Bus.publish` calls every handler in the order they
subscribed, on the caller's thread (the event loop, for every bus in
huxleyd), before it returns: no queue, no task, no hop. So there is no bound
and nothing to drop here; a handler must not block or await. A subscriber
that can fall behind (a ``huxleyctl watch`` client) keeps its own bounded
queue and says what it drops (:class:`~huxleyd.control.watch.EventFeed`).
A handler that raises is logged (the ``failed`` event, with the event's
type) and the others still get the event: a broken subscriber never costs
the coordinator an event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from huxleyd.logs import EventLogger

__all__ = ["Bus"]

E = TypeVar("E")


class Bus(Generic[E]):
    """Fan ``E`` events out to subscribers, synchronously, in subscription order."""

    def __init__(self, log: EventLogger, *, failed: str) -> None:
        self._handlers: list[Callable[[E], None]] = []
        self._log = log
        self._failed = failed
        """The journal event logged when a handler raises."""

    @property
    def subscribers(self) -> int:
        return len(self._handlers)

    def subscribe(self, handler: Callable[[E], None]) -> Callable[[], None]:
        """Hand every event published from now on to ``handler``, after the
        handlers before it. Returns what unsubscribes it (idempotent)."""
        self._handlers.append(handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                self._handlers.remove(handler)

        return unsubscribe

    def publish(self, event: E) -> None:
        """Call every handler with ``event`` now. Never raises what a handler raised."""
        for handler in tuple(self._handlers):  # a handler may unsubscribe itself
            try:
                handler(event)
            except Exception:
                self._log.exception(self._failed, event=type(event).__name__)
