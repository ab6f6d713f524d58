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
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar, overload


class Doorbell:
    """One sleeper (the audio thread), any number of ringers (asyncio)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.armed = False
        self.rings = 0
        """Times it woke a sleeper (or an armed thread about to sleep)."""
        self.on_ring: Callable[[], None] | None = None
        """Called on every ring, armed or not: the C feeder publishes the requests
        (:mod:`.fed`), which it reads without the GIL instead of the thread's fields."""

    def ring(self) -> None:
        """Wake the sleeper, if one is armed. Any thread; cheap when none is."""
        hook = self.on_ring
        if hook is not None:
            hook()
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


T = TypeVar("T")


class Rung(Protocol):
    doorbell: Doorbell


class Request(Generic[T]):
    """A request field: asyncio stores it, the thread reads it at its next period.

    Storing one rings the owner's :attr:`doorbell` afterwards (an idle thread asleep
    wakes to honour it). The value lives in ``_<name>``; the owner's ``__init__``
    sets that directly (no ring for the initial value).
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = "_" + name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Request[T]: ...

    @overload
    def __get__(self, obj: Rung, objtype: type | None = None) -> T: ...

    def __get__(self, obj: Rung | None, objtype: type | None = None) -> T | Request[T]:
        if obj is None:
            return self
        value: T = getattr(obj, self._slot)
        return value

    def __set__(self, obj: Rung, value: T) -> None:
        setattr(obj, self._slot, value)  # publish, then ring
        obj.doorbell.ring()
