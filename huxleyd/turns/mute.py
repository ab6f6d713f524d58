"""The microphone mute, as the turn layer keeps it: the switch and the button gesture.

Muted, the microphone is closed at the source (the engine queues no frame,
the wake word hears nothing), the LEDs show ``muted`` whenever nothing else
runs, and a press starts no turn. The state survives a restart: the owner
persists each change (``on_change``) and passes the saved state back in.

The button has one gesture for it, a **long silent hold**: held at least
:data:`MUTE_HOLD_S` without a word said (the end-of-speech detector's level
rule) mutes at release; the turn it opened is dropped, nothing committed.
While muted, a hold of :data:`MUTE_HOLD_S` unmutes; a shorter press only
reminds (a cue and the ``muted`` LEDs). ``huxleyctl mute on|off`` does the same
through :meth:`Coordinator.set_muted <huxleyd.turns.coordinator.Coordinator.set_muted>`.
"""

from __future__ import annotations

import enum

from huxleyd.handsfree.settings import WakeSettings
from huxleyd.handsfree.vad import EndOfSpeech

MUTE_HOLD_S = 3.0
"""How long the silent hold that mutes (or the hold that unmutes) lasts."""


class Gesture(enum.Enum):
    NONE = "none"
    MUTE = "mute"
    UNMUTE = "unmute"
    REMIND = "remind"
    """A short press while muted: say so."""


class MuteSwitch:
    """Whether the mic is muted, and what a hold of the button meant."""

    def __init__(self, *, muted: bool = False) -> None:
        self.muted = muted
        self._pressed_at: float | None = None
        self._speech: EndOfSpeech | None = None

    def pressed(self, at: float) -> None:
        """The button went down (muted: no turn; not muted: a turn starts)."""
        self._pressed_at = at
        self._speech = None if self.muted else EndOfSpeech(WakeSettings())

    def heard(self, pcm: bytes, duration_ms: float) -> None:
        """A frame of the held turn (its level tells a silent hold from talk)."""
        if self._speech is not None:
            self._speech.frame(pcm, duration_ms)

    def released(self, at: float) -> Gesture:
        """The button came up: what the hold meant."""
        pressed_at, speech = self._pressed_at, self._speech
        self._pressed_at, self._speech = None, None
        if pressed_at is None:
            return Gesture.NONE
        long = at - pressed_at >= MUTE_HOLD_S
        if self.muted:
            return Gesture.UNMUTE if long else Gesture.REMIND
        if long and speech is not None and speech.speech_ms == 0:
            return Gesture.MUTE
        return Gesture.NONE
