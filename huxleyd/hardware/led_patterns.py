"""What the status LEDs show: the states, the patterns, and the pure maths of a pattern.

Layer: pure data and functions (no pins, no asyncio). The drivers
(:mod:`huxleyd.hardware.led_drivers`, :mod:`huxleyd.hardware.apa102`) show a
:class:`LedPattern`; the controller (:mod:`huxleyd.hardware.led_controller`)
picks one per :class:`LedState`. Nothing here imports either of them, so the
three modules form a line, not a circle: patterns ← drivers ← controller.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from huxleyd.hardware.settings import LedLimits


class LedState(enum.StrEnum):
    """What the speaker is doing, as far as the LEDs show it.

    A ``StrEnum``: the value is what the journal (``led_state state=…``) shows,
    and it equals the :class:`~huxleyd.turns.outputs.Activity` it mirrors."""

    BOOTING = "booting"
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    MEDIA = "media"
    OFFLINE = "offline"
    ERROR = "error"
    MUTED = "muted"


class PatternKind(enum.Enum):
    OFF = "off"
    SOLID = "solid"
    BLINK = "blink"
    PULSE = "pulse"


Rgb = tuple[float, float, float]
"""A colour, each channel 0.0-1.0."""

WHITE: Rgb = (1.0, 1.0, 1.0)
BLUE: Rgb = (0.0, 0.2, 1.0)
CYAN: Rgb = (0.0, 0.8, 1.0)
GREEN: Rgb = (0.0, 1.0, 0.2)
AMBER: Rgb = (1.0, 0.45, 0.0)
RED: Rgb = (1.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class LedPattern:
    """How a state looks.

    ``BLINK`` is ``on_s`` lit then ``off_s`` dark; ``PULSE`` fades up over
    ``fade_in_s`` and down over ``fade_out_s``. ``level`` (0-1) scales the
    colour; single-colour LEDs ignore ``color`` and plain (non-PWM) LEDs
    treat any level above zero as on and show a pulse as a blink.
    """

    kind: PatternKind
    color: Rgb = WHITE
    level: float = 1.0
    on_s: float = 0.0
    off_s: float = 0.0
    fade_in_s: float = 0.0
    fade_out_s: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.level <= 1.0 or any(not 0.0 <= c <= 1.0 for c in self.color):
            raise ValueError(f"level and colour channels must be 0-1: {self}")
        if self.kind is PatternKind.BLINK and (self.on_s <= 0 or self.off_s <= 0):
            raise ValueError(f"a blink needs on_s and off_s > 0: {self}")
        if self.kind is PatternKind.PULSE and (self.fade_in_s <= 0 or self.fade_out_s <= 0):
            raise ValueError(f"a pulse needs fade_in_s and fade_out_s > 0: {self}")

    @property
    def period_s(self) -> float:
        """One cycle of a blink or pulse (0 for steady patterns)."""
        if self.kind is PatternKind.BLINK:
            return self.on_s + self.off_s
        if self.kind is PatternKind.PULSE:
            return self.fade_in_s + self.fade_out_s
        return 0.0

    @property
    def lit_color(self) -> Rgb:
        """``color`` scaled by ``level``: what the LED shows at full brightness."""
        r, g, b = self.color
        return (r * self.level, g * self.level, b * self.level)


OFF = LedPattern(PatternKind.OFF)

DEFAULT_PATTERNS: Mapping[LedState, LedPattern] = {
    LedState.BOOTING: LedPattern(PatternKind.PULSE, WHITE, 0.6, fade_in_s=1.0, fade_out_s=1.0),
    LedState.IDLE: OFF,
    LedState.LISTENING: LedPattern(PatternKind.SOLID, BLUE),
    LedState.THINKING: LedPattern(PatternKind.BLINK, CYAN, on_s=0.15, off_s=0.15),
    LedState.SPEAKING: LedPattern(PatternKind.PULSE, GREEN, fade_in_s=0.4, fade_out_s=0.4),
    LedState.MEDIA: LedPattern(PatternKind.SOLID, GREEN, 0.2),
    LedState.OFFLINE: LedPattern(PatternKind.BLINK, AMBER, on_s=0.2, off_s=1.8),
    LedState.ERROR: LedPattern(PatternKind.BLINK, RED, on_s=0.1, off_s=0.1),
    LedState.MUTED: LedPattern(PatternKind.SOLID, RED, 0.3),
}
"""Every state has a pattern: blue = listening, cyan blink = thinking, green
pulse = speaking, dim green = media, slow amber = offline, fast red = error,
dim red = muted."""


def limits_from_settings(limits: LedLimits) -> dict[LedState, float]:
    """The watchdog limits (seconds) for the transient states, from ``[hardware.led_limits]``."""
    return {
        LedState.LISTENING: limits.listening_s,
        LedState.THINKING: limits.thinking_s,
        LedState.SPEAKING: limits.speaking_s,
        LedState.ERROR: limits.error_s,
    }


def pattern_level(pattern: LedPattern, elapsed_s: float) -> float:
    """Brightness (0-1, before ``level``) of ``pattern`` at ``elapsed_s`` into it.

    Pure, for drivers that animate themselves (APA102). A blink is lit for
    the first ``on_s`` of each period; a pulse ramps linearly up then down.
    """
    if pattern.kind is PatternKind.OFF:
        return 0.0
    if pattern.kind is PatternKind.SOLID:
        return 1.0
    phase = elapsed_s % pattern.period_s
    if pattern.kind is PatternKind.BLINK:
        return 1.0 if phase < pattern.on_s else 0.0
    if phase < pattern.fade_in_s:
        return phase / pattern.fade_in_s
    return max(0.0, 1.0 - (phase - pattern.fade_in_s) / pattern.fade_out_s)
