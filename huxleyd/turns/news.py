"""What the turn layer tells the rest of the daemon: typed events on one bus.

The coordinator publishes these on its :class:`~huxleyd.bus.Bus`
(:meth:`~huxleyd.turns.coordinator.Coordinator.subscribe`), on the loop,
at the moment the fact becomes true. It does not know who listens: the
``huxleyctl watch`` feed (:mod:`huxleyd.control.feedwriter`), the LEDs
(:mod:`huxleyd.hardware.led_follow`), systemd's status line
(:class:`~huxleyd.app.systemd.StatusLine`), the runtime's record of the
connection and of the mute. None of them is on the way from an input to
the coordinator, and none can hold the coordinator up (the bus is
synchronous; a subscriber that can fall behind keeps its own queue).

Order, per press: :class:`TurnBegan`, then :class:`ActivityChanged`
(``listening``)…, then :class:`TurnEnded` and the activity back to ``idle``.
:class:`ConnectionChanged` comes before the coordinator acts on the new
state (a turn lost with the connection ends after it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from huxleyd.degraded import Problem
from huxleyd.providers.base import ConnectionStatus
from huxleyd.skillhost.host import ToolOutcome
from huxleyd.turns.state import TurnRecord, TurnSource


class Activity(enum.StrEnum):
    """What the device is doing, for the LEDs (a coarser view than TurnState).

    A ``StrEnum``: the value is the journal's ``HUXLEY_STATE``, the ``watch``
    feed's ``state`` and ``huxleyctl status``'s text, unchanged."""

    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    MEDIA = "media"
    CALL = "call"
    """A skill holds the microphone (InputClaim)."""
    OFFLINE = "offline"
    """The button was pressed while the provider is unreachable: nothing listens."""
    MUTED = "muted"
    """The microphone is muted (``huxleyctl mute``, a long silent hold): nothing listens."""


@dataclass(frozen=True, slots=True)
class ActivityChanged:
    """The device's activity changed (published on changes only)."""

    activity: Activity


@dataclass(frozen=True, slots=True)
class TurnBegan:
    """A turn began: from here until its :class:`TurnEnded`, it is the current turn."""

    turn_id: str
    source: TurnSource


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """A turn ended; ``turn.outcome`` is set and its ``turn_done`` line written."""

    turn: TurnRecord


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call's outcome, as sent to the model (errors and cancellations included)."""

    outcome: ToolOutcome


@dataclass(frozen=True, slots=True)
class MuteChanged:
    """The microphone was muted or unmuted (a hold, ``huxleyctl mute``)."""

    muted: bool


@dataclass(frozen=True, slots=True)
class DegradedPress:
    """A press played the "something is wrong" cue for these new problems."""

    problems: tuple[Problem, ...]


@dataclass(frozen=True, slots=True)
class ConnectionChanged:
    """The session reported a connection state (a call per report, not per change)."""

    status: ConnectionStatus


TurnNews = (
    ActivityChanged
    | TurnBegan
    | TurnEnded
    | ToolFinished
    | MuteChanged
    | DegradedPress
    | ConnectionChanged
)
"""Everything the coordinator publishes."""
