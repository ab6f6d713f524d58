"""The PTT button: gpiozero edges (on gpiozero's threads) arrive on the loop as
ButtonEvents, in a consistent order, stamped by the injected clock."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from huxleyd.clock import ManualClock
from huxleyd.hardware.boards import ButtonProfile
from huxleyd.hardware.button import ButtonEvent, ButtonEventKind, PushToTalkButton

PRESSED, RELEASED, LONG_HOLD = (
    ButtonEventKind.PRESSED,
    ButtonEventKind.RELEASED,
    ButtonEventKind.LONG_HOLD,
)


async def _next(button: PushToTalkButton) -> ButtonEvent:
    return await asyncio.wait_for(button.next_event(), timeout=5)


async def _settle() -> None:
    """Let call_soon_threadsafe hand-offs already scheduled run."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_press_and_release_on_the_pin(factory: Any) -> None:
    clock = ManualClock(100.0)
    button = PushToTalkButton(17, pin_factory=factory, clock=clock, max_hold_s=30)
    pin = factory.pin(17)
    assert pin.state == 1  # idles high on its pull-up
    pin.drive_low()
    clock.advance(1.5)
    pin.drive_high()
    first, second = await _next(button), await _next(button)
    assert first == ButtonEvent(PRESSED, 100.0)
    assert second == ButtonEvent(RELEASED, 101.5)
    assert not button.is_pressed
    button.close()


async def test_from_profile_uses_the_pin_and_pull(factory: Any) -> None:
    profile = ButtonProfile(pin=4, pull_up=False, bounce_ms=0)
    button = PushToTalkButton.from_profile(profile, pin_factory=factory, max_hold_s=30)
    pin = factory.pin(4)
    pin.drive_high()  # pull-down wiring: a press pulls the pin up
    assert (await _next(button)).kind is PRESSED
    button.close()


async def test_edges_from_another_thread_reach_the_loop(factory: Any) -> None:
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=30)
    pin = factory.pin(17)
    loop_thread = threading.get_ident()
    seen_on: list[int] = []

    def finger() -> None:
        pin.drive_low()
        pin.drive_high()

    original = button._deliver

    def spy(event: ButtonEvent) -> None:
        seen_on.append(threading.get_ident())
        original(event)

    button._deliver = spy  # type: ignore[method-assign]
    worker = threading.Thread(target=finger)
    worker.start()
    worker.join()
    kinds = [(await _next(button)).kind for _ in range(2)]
    assert kinds == [PRESSED, RELEASED]
    assert seen_on == [loop_thread, loop_thread]
    button.close()


async def test_long_hold_fires_once_then_release_follows(factory: Any) -> None:
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=0.05)
    pin = factory.pin(17)
    pin.drive_low()
    assert (await _next(button)).kind is PRESSED
    assert (await _next(button)).kind is LONG_HOLD
    pin.drive_high()
    assert (await _next(button)).kind is RELEASED
    await asyncio.sleep(0.1)
    assert button.pending() == 0
    button.close()


async def test_impossible_sequences_are_dropped(factory: Any) -> None:
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=30)
    clock = ManualClock()
    button._deliver(ButtonEvent(RELEASED, clock.monotonic()))  # release without press
    button._deliver(ButtonEvent(LONG_HOLD, 0.0))  # hold without press
    button._deliver(ButtonEvent(PRESSED, 1.0))
    button._deliver(ButtonEvent(PRESSED, 2.0))  # bounce that got through
    button._deliver(ButtonEvent(LONG_HOLD, 3.0))
    button._deliver(ButtonEvent(LONG_HOLD, 4.0))  # fired twice
    button._deliver(ButtonEvent(RELEASED, 5.0))
    got = [await _next(button) for _ in range(3)]
    assert got == [
        ButtonEvent(PRESSED, 1.0),
        ButtonEvent(LONG_HOLD, 3.0),
        ButtonEvent(RELEASED, 5.0),
    ]
    assert button.pending() == 0
    button.close()


async def test_remote_ptt_drives_the_mock_pin(factory: Any) -> None:
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=30)
    pin = factory.pin(17)
    button.press()
    assert (await _next(button)).kind is PRESSED
    assert pin.state == 0  # the pin really moved: gpiozero saw the edge
    button.release()
    assert (await _next(button)).kind is RELEASED
    assert pin.state == 1
    button.close()


async def test_remote_ptt_injects_when_pins_are_real(factory: Any) -> None:
    # remote_drives_pin=False: what happens on a Pi, where the pin cannot be moved.
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=0.05, remote_drives_pin=False)
    pin = factory.pin(17)
    button.press()
    event = await _next(button)
    assert event.kind is PRESSED and event.remote
    assert pin.state == 1  # untouched
    assert (await _next(button)).kind is LONG_HOLD  # our own hold timer
    button.release()
    assert (await _next(button)).kind is RELEASED
    button.press()
    button.release()
    assert [(await _next(button)).kind for _ in range(2)] == [PRESSED, RELEASED]
    await asyncio.sleep(0.1)
    assert button.pending() == 0  # the released press's hold timer was cancelled
    button.close()


async def test_full_queue_drops_the_oldest(factory: Any) -> None:
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=30, queue_size=2)
    pin = factory.pin(17)
    for _ in range(3):
        pin.drive_low()
        pin.drive_high()
    await _settle()
    assert button.dropped_events == 4
    got = [(await _next(button)).kind for _ in range(2)]
    assert got == [PRESSED, RELEASED]  # the newest press/release survived
    assert not button.is_pressed
    button.close()
    button.close()  # idempotent


async def test_closing_a_held_button_does_not_wait_out_the_hold_limit(factory: Any) -> None:
    # gpiozero's own hold thread used to wait max_hold_s inside close() and
    # then raise ZombieThread; the hold limit is now a loop timer.
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=600, bounce_s=None)
    factory.pin(17).drive_low()
    assert (await _next(button)).kind is PRESSED
    button.close()  # returns; no ZombieThread
    assert button._button.closed


class RecordingTarget:
    """A press target (the coordinator's two inputs) that records, and says when."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.changed = asyncio.Event()

    def press(self) -> None:
        self.calls.append("press")
        self.changed.set()

    def release(self) -> None:
        self.calls.append("release")
        self.changed.set()

    async def until(self, count: int) -> list[str]:
        while len(self.calls) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), timeout=5)
        return self.calls


async def test_pump_hands_presses_and_releases_to_its_target(factory: Any) -> None:
    # The one path from the pin to the turn layer, with nothing of the daemon around it.
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=0.05)
    target = RecordingTarget()
    pump = asyncio.get_running_loop().create_task(button.pump(target))
    try:
        pin = factory.pin(17)
        pin.drive_low()
        assert await target.until(2) == ["press", "release"]  # the hold limit ends the turn
        pin.drive_high()
        assert await target.until(3) == ["press", "release", "release"]
    finally:
        pump.cancel()
        button.close()


async def test_gpiozero_hold_thread_is_ended_and_presses_still_arrive(factory: Any) -> None:
    """Issue 39: gpiozero's hold thread polls ten times a second for a hold event
    nothing uses (the long hold is the loop's timer); the idle daemon ends it."""
    button = PushToTalkButton(17, pin_factory=factory, max_hold_s=30)
    hold = button._button._hold_thread
    hold.join(5)  # returns at once once it ended (gpiozero raises if it did not)
    assert not hold.is_alive()
    pin = factory.pin(17)
    pin.drive_low()
    pin.drive_high()
    assert [(await _next(button)).kind for _ in range(2)] == [PRESSED, RELEASED]
    button.close()  # joins the ended thread: no ZombieThread
