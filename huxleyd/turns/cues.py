"""What the user hears when the provider ends a session for good.

Layer: pure (turns). The provider's core says *why* a session ended
(:class:`~huxleyd.providers.base.EndReason`); which earcon that is for the
person at the device is decided here, in the turn layer, beside the other
cues the coordinator plays (offline, key refused, degraded).
"""

from __future__ import annotations

from collections.abc import Container

from huxleyd.audio.types import Earcon
from huxleyd.providers.base import EndReason


def failure_cue(ended: EndReason | None, available: Container[str]) -> Earcon:
    """The earcon for a connection that FAILED (the same settings will fail again).

    A refused key is the one failure the user can name ("the key was refused"),
    so it plays the persona's ``key_refused`` cue when the persona has one, as
    the slow-retry KEY_REFUSED state does; every other end plays ``error``.
    """
    if ended is EndReason.KEY_REFUSED and Earcon.KEY_REFUSED in available:
        return Earcon.KEY_REFUSED
    return Earcon.ERROR
