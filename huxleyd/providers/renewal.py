"""When a renewal may close the socket: once the reply has been heard.

Layer: asyncio helper of the transport, no sockets. A reply arrives faster
than it plays, so "idle on the wire" comes seconds before the listener has
heard the end; a renewal then would cut what they hear (the socket goes,
and with it the barge-in's truncate and the session the reply belongs to).
:class:`HeardGate` holds a renewal until the turn layer's
:class:`~huxleyd.providers.base.ReplyListener` says the reply has been heard,
bounded by the time the server gave (``goAway.timeLeft``, counted from the
``goAway``) minus :data:`RENEW_MARGIN_S`, and never more than
:data:`RENEW_WAIT_MAX_S`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from huxleyd.clock import Clock
from huxleyd.providers.base import ReplyListener

RENEW_MARGIN_S = 3.0
"""A renewal waiting for the listener keeps this much of the time the server
gave unused: our close and the new setup come before the server's cut."""
RENEW_WAIT_MAX_S = 120.0
"""Without a time from the server, a renewal waits at most this long for the
reply to be heard (far below any session cap left after the daemon renews)."""


class HeardGate:
    """One connection's renewals wait here (see the module docstring).

    The transport calls :meth:`new_connection` when a socket opens,
    :meth:`server_time_left` when the server says how long it has, asks
    :meth:`closes_now` whether a renewal may close at once, and otherwise
    awaits :meth:`wait` (True: heard in time; False: the bound ran out).
    """

    def __init__(self, *, clock: Clock, sleep: Callable[[float], Awaitable[None]]) -> None:
        self._clock = clock
        self._sleep = sleep
        self._listener: ReplyListener | None = None
        self._deadline: float | None = None
        """When the server said it ends this connection (our clock), if it did."""
        self.pending = False
        """A renewal is waiting for the listener."""

    def hold_for(self, listener: ReplyListener) -> None:
        self._listener = listener

    def new_connection(self) -> None:
        self._deadline = None

    def server_time_left(self, left_s: float) -> None:
        """The server ends this connection in ``left_s`` (from now)."""
        self._deadline = self._clock.monotonic() + left_s

    def bound_s(self) -> float:
        """How long a renewal may still wait on this connection."""
        if self._deadline is None:
            return RENEW_WAIT_MAX_S
        return min(RENEW_WAIT_MAX_S, self._deadline - self._clock.monotonic() - RENEW_MARGIN_S)

    def closes_now(self) -> bool:
        """Nothing to wait for: no listener, nothing playing, or no time left."""
        listener = self._listener
        return listener is None or listener.reply_heard_now or self.bound_s() <= 0

    async def wait(self) -> bool:
        """Wait for the listener, at most :meth:`bound_s`; True if it was in time."""
        assert self._listener is not None, "closes_now() said there is nothing to wait for"
        self.pending = True
        heard = asyncio.ensure_future(self._listener.reply_heard())
        timer = asyncio.ensure_future(self._sleep(self.bound_s()))
        try:
            await asyncio.wait({heard, timer}, return_when=asyncio.FIRST_COMPLETED)
            return heard.done() and not heard.cancelled() and heard.exception() is None
        finally:
            self.pending = False
            for task in (heard, timer):
                task.cancel()
            await asyncio.gather(heard, timer, return_exceptions=True)
