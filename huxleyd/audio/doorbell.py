"""How asyncio wakes the idle audio thread: a doorbell rung after every request.

When nothing plays, no ramp runs and nobody listens to the mic, the audio thread
has nothing to do each period (the C callbacks keep the card fed with silence
and the mic ring filled). It arms the doorbell, checks once more that all is
still idle, and sleeps on it with the GIL released. Every asyncio action that
could give it work (a ring write, a pause, duck, gain or flush request, the
master gain, an earcon gate, the mic switched on, close) rings it afterwards.

No wake-up is lost: asyncio publishes its request, then rings; the thread arms,
then re-checks. Whichever order the two interleave in, either the re-check sees
the request or the ring sees the arm. Ringing an unarmed doorbell costs one
attribute read, so asyncio may ring it freely.
"""

from __future__ import annotations

import threading


class Doorbell:
    """One sleeper (the audio thread), any number of ringers (asyncio)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.armed = False
        self.rings = 0
        """Times it woke a sleeper (or an armed thread about to sleep)."""

    def ring(self) -> None:
        """Wake the sleeper, if one is armed. Any thread; cheap when none is."""
        if self.armed:
            self.armed = False
            self.rings += 1
            self._event.set()

    def arm(self) -> None:
        """The sleeper's first step: from here on a ring is not missed."""
        self._event.clear()
        self.armed = True

    def disarm(self) -> None:
        """The re-check found work after all: do not sleep."""
        self.armed = False

    def sleep(self, timeout_s: float) -> bool:
        """Wait (GIL released) until rung or ``timeout_s``; True when rung."""
        rung = self._event.wait(timeout_s)
        self.armed = False
        return rung
