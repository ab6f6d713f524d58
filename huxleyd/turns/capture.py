"""The microphone capture switch, and the one rule that decides it.

**Capture is on exactly while someone listens**: the user holds the button
(the turn is ``LISTENING``), a skill holds the microphone (an input claim
is live), or the wake word is armed (its detector hears the mic on the
device; nothing goes to the provider before a detection). Otherwise the engine does not queue mic frames at all, so nothing
heard while nobody listened can leak into the next turn.

Switching it on first discards what the engine still holds from before (a
frame captured while the switch was going off, or during a start-up race):
a new listener hears only what comes after it started listening.

:class:`MicCapture` is the only caller of the engine's
``set_capture_active`` and ``drain_mic``. Its owner (the coordinator)
reports the two facts as they change: :meth:`MicCapture.listening` from
``set_state``, :meth:`MicCapture.claimed` when a claim starts and ends.
"""

from __future__ import annotations

from typing import Protocol


class CaptureSwitch(Protocol):
    """The part of the audio engine the switch drives (an :class:`AudioPort` has it)."""

    def set_capture_active(self, active: bool) -> None: ...

    def drain_mic(self) -> int: ...


class MicCapture:
    """Owns the capture switch: on while the user listens or a claim holds the mic."""

    def __init__(self, engine: CaptureSwitch) -> None:
        self._engine = engine
        self._listening = False
        self._claimed = False
        self._wake_armed = False
        self._active: bool | None = None
        """What the engine was last told (None: nothing yet)."""

    @property
    def active(self) -> bool:
        return bool(self._active)

    def start(self) -> None:
        """Tell the engine the switch's state now (off until someone listens)."""
        self._apply()

    def listening(self, listening: bool) -> None:
        """The user started or stopped holding the button (the turn's LISTENING state)."""
        self._listening = listening
        self._apply()

    def claimed(self, claimed: bool) -> None:
        """An input claim took the microphone, or gave it back."""
        self._claimed = claimed
        self._apply()

    def wake_armed(self, armed: bool) -> None:
        """The wake word's detector listens (configured and not muted), or stopped."""
        self._wake_armed = armed
        self._apply()

    def _apply(self) -> None:
        active = self._listening or self._claimed or self._wake_armed
        if active is self._active:
            return
        if active:
            self._engine.drain_mic()  # from before anyone listened: stale
        self._engine.set_capture_active(active)
        self._active = active
