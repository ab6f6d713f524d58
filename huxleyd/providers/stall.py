"""How long a due reply has gone without a complete frame: the stall clock.

Layer: asyncio, no sockets. A peer that trickles a frame byte by byte (or
a link that silently stopped) keeps TCP and even the keepalive content for
a long while; the :class:`~huxleyd.providers.transport.ProviderConnection`
gives such a socket up when :meth:`StallClock.stalled` returns. The clock
runs only while a reply is due, so an idle connection costs no wake-ups.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from huxleyd.clock import Clock


class StallClock:
    """The stall clock of one socket at a time (:meth:`reset` for each new one)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last_frame_at = 0.0
        self._due_at: float | None = None
        self._due = asyncio.Event()

    def reset(self, now: float) -> None:
        """A new socket, opened at ``now``: nothing is due on it yet."""
        self._due_at = None
        self._due.clear()
        self._last_frame_at = now

    def frame_received(self) -> None:
        self._last_frame_at = self._clock.monotonic()

    def note(self, reply_due: bool, *, peer_spoke: bool = False) -> None:
        """Start the clock when a reply becomes due; stop it only when the
        peer's own frame ended it (``peer_spoke``).

        A reply given up on our side before anything came (a cancel, a silent
        retry about to ask again) leaves the clock running from the first
        request: the peer still owes a frame, and a retry must not buy a
        stalled link another ``stall_timeout_s``.
        """
        if reply_due:
            if self._due_at is None:
                self._due_at = self._clock.monotonic()
                self._due.set()
        elif peer_spoke:
            self._due_at = None
            self._due.clear()

    def quiet_for_s(self) -> float | None:
        """Seconds a due reply has gone without one complete frame (None: none is due)."""
        if self._due_at is None:
            return None
        return self._clock.monotonic() - max(self._due_at, self._last_frame_at)

    async def stalled(self, timeout_s: float, sleep: Callable[[float], Awaitable[None]]) -> float:
        """Return (the quiet seconds) once a due reply went ``timeout_s`` without a frame."""
        while True:
            await self._due.wait()  # idle costs no wake-ups
            quiet = self.quiet_for_s()
            if quiet is None:
                await asyncio.sleep(0)  # the flag is being cleared
                continue
            if quiet < timeout_s:
                await sleep(timeout_s - quiet)
                continue
            return quiet
