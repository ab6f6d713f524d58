"""The LEDs and systemd's status line follow the coordinator's typed events.

A real coordinator (the turn rig) publishes; :class:`LedFollower` and
:class:`StatusLine` subscribe as ``build`` subscribes them. Both show the
provider unreachable for as long as it is, whatever the activity does
meanwhile, and both come back to the activity when the connection does.
"""

from __future__ import annotations

from huxleyd.app.systemd import StatusLine, unreachable_status
from huxleyd.hardware.led_follow import LedFollower
from huxleyd.hardware.led_patterns import LedState
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.turns.news import ConnectionChanged
from tests.fakes.clock import settle
from tests.fakes.notify import RecordingNotifier
from tests.fakes.turn_rig import Rig


class RecordingLeds:
    def __init__(self) -> None:
        self.states: list[LedState] = []

    def set_state(self, state: LedState) -> None:
        self.states.append(state)


def _shown(leds: RecordingLeds) -> LedState:
    """Read through a call, so mypy does not keep an earlier narrowing."""
    return leds.states[-1]


def _statuses(notifier: RecordingNotifier) -> list[str]:
    return [m["STATUS"] for m in notifier.sent if "STATUS" in m]


async def test_offline_stays_shown_through_a_lost_turn_and_clears_when_back() -> None:
    leds, notifier = RecordingLeds(), RecordingNotifier()
    async with Rig() as rig:
        coordinator = rig.coordinator
        coordinator.subscribe(LedFollower(leds).on_news)
        coordinator.subscribe(StatusLine(notifier).on_news)
        coordinator.say("what time is it")
        assert _shown(leds) is LedState.THINKING
        assert _statuses(notifier)[-1] == "thinking"
        # The link goes while the reply is due: the turn is lost, the activity
        # goes back to idle, and both still say the provider is away.
        rig.provider.connected = False
        coordinator.on_connection_status(ConnectionStatus(ConnectionState.OFFLINE, attempt=4))
        await settle()  # nothing arrived to play out: the lost turn ends at once
        assert coordinator.turn is None
        assert _shown(leds) is LedState.OFFLINE
        assert _statuses(notifier)[-1] == "offline, retrying (attempt 4)"
        coordinator.press()  # refused: the offline cue, the OFFLINE activity
        assert _shown(leds) is LedState.OFFLINE
        assert _statuses(notifier)[-1] == "offline, retrying (attempt 4)"
        rig.provider.connected = True
        coordinator.on_connection_status(ConnectionStatus(ConnectionState.CONNECTED))
        assert _shown(leds) is LedState.IDLE
        assert _statuses(notifier)[-1] == "idle"  # not "offline" an hour later


async def test_a_refused_key_and_a_failed_setup_say_why() -> None:
    leds, notifier = RecordingLeds(), RecordingNotifier()
    async with Rig() as rig:
        coordinator = rig.coordinator
        coordinator.subscribe(LedFollower(leds).on_news)
        coordinator.subscribe(StatusLine(notifier).on_news)
        refused = ConnectionStatus(ConnectionState.KEY_REFUSED, retry_in_s=60.0)
        coordinator.on_connection_status(refused)
        assert _statuses(notifier)[-1] == "the provider refused the API key; retrying every 60 s"
        failed = ConnectionStatus(ConnectionState.SETUP_FAILED, detail="setup failed: no Wi-Fi")
        coordinator.on_connection_status(failed)
        assert _shown(leds) is LedState.ERROR
        coordinator.press()
        assert _statuses(notifier)[-1] == "setup failed: no Wi-Fi"
        assert _shown(leds) is LedState.ERROR


def test_the_status_line_and_the_leds_agree_on_every_state() -> None:
    # One rule (ConnectionState.unreachable): the line says "unreachable" in
    # exactly the states in which the LEDs show offline or error.
    for state in ConnectionState:
        leds = RecordingLeds()
        LedFollower(leds).on_news(ConnectionChanged(ConnectionStatus(state, attempt=2)))
        shows_down = bool(leds.states) and leds.states[-1] in (LedState.OFFLINE, LedState.ERROR)
        said = unreachable_status(ConnectionStatus(state, attempt=2))
        assert (said is not None) == shows_down == state.unreachable, state
