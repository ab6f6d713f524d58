"""The LEDs follow the device: what the coordinator publishes, shown.

Layer: hardware policy over the turn layer's typed events
(:mod:`huxleyd.turns.news`). :class:`LedFollower` subscribes to the
coordinator's bus and sets one :class:`~huxleyd.hardware.led_patterns.LedState`
on the :class:`~huxleyd.hardware.led_controller.LedController` per change.
It holds the last activity and whether the provider is unreachable, so the
state shown depends on those two facts, not on the order the events came in:
while the provider is unreachable (offline, key refused, setup failed) the
LEDs say so and an activity change does not hide it.
"""

from __future__ import annotations

from typing import Protocol

from huxleyd.hardware.led_patterns import LedState
from huxleyd.logs import get_logger
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.turns.news import Activity, ActivityChanged, ConnectionChanged, TurnNews

log = get_logger("huxleyd.hardware")

ACTIVITY_LEDS: dict[Activity, LedState] = {
    Activity.IDLE: LedState.IDLE,
    Activity.LISTENING: LedState.LISTENING,
    Activity.THINKING: LedState.THINKING,
    Activity.SPEAKING: LedState.SPEAKING,
    Activity.MEDIA: LedState.MEDIA,
    Activity.OFFLINE: LedState.OFFLINE,
    Activity.MUTED: LedState.MUTED,
}
"""An activity's LED state; one not listed (``call``) shows IDLE."""


class LedSink(Protocol):
    """What the follower drives (``LedController.set_state``)."""

    def set_state(self, state: LedState) -> None: ...


class LedFollower:
    """Subscribe :meth:`on_news` to the coordinator; the LEDs follow."""

    def __init__(self, leds: LedSink) -> None:
        self._leds = leds
        self._activity = Activity.IDLE
        self._unreachable = False

    def on_news(self, news: TurnNews) -> None:
        if isinstance(news, ActivityChanged):
            self._activity = news.activity
            if not self._unreachable:
                self._show(ACTIVITY_LEDS.get(news.activity, LedState.IDLE))
        elif isinstance(news, ConnectionChanged):
            self._connection(news.status)

    def _connection(self, status: ConnectionStatus) -> None:
        state = status.state
        self._unreachable = state.unreachable
        if state is ConnectionState.SETUP_FAILED:
            self._show(LedState.ERROR)
        elif state.unreachable:
            self._show(LedState.OFFLINE)
        elif state is ConnectionState.CONNECTED:
            muted = self._activity is Activity.MUTED
            self._show(LedState.MUTED if muted else LedState.IDLE)

    def _show(self, state: LedState) -> None:
        """A failing LED write (a flaky GPIO or SPI) is logged; it never breaks a turn."""
        try:
            self._leds.set_state(state)
        except Exception as exc:
            log.error("led_write_failed", state=state.value, error=f"{type(exc).__name__}: {exc}")
