"""Case 3: a timer that comes due while the provider is down is kept until heard.

The timers skill runs against the real proactive layer (the coordinator's
inject queue) with a provider that is disconnected: the announcement waits
in the queue. A restart before the provider returns must not lose the
timer; the next start announces it, and only once heard is it deleted.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import cast

from huxley_sdk.context import InjectTurnAndWait
from huxley_sdk.testing import MemoryStorage, make_test_context
from huxleyd.providers.events import AudioChunk, ResponseDone, ResponseStarted, ResponseStatus
from huxleyd.skills.timers import KEY_PREFIX, TimersSkill
from tests.e2e.harness import until
from tests.fakes.clock import FakeSystemClock, settle
from tests.fakes.turn_rig import Rig

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def wired(rig: Rig, storage: MemoryStorage, clock: FakeSystemClock) -> tuple[TimersSkill, object]:
    skill = TimersSkill(clock=clock, poll_s=0.01)
    proactive = rig.coordinator.proactive
    ctx = dataclasses.replace(
        make_test_context(storage=storage),
        inject_turn=proactive.inject_turn,
        inject_turn_and_wait=cast(InjectTurnAndWait, proactive.inject_turn_and_wait),
    )
    return skill, ctx


async def test_a_timer_due_while_offline_survives_a_restart_and_is_deleted_once_heard() -> None:
    storage, clock = MemoryStorage(), FakeSystemClock(START)
    async with Rig() as rig:
        rig.provider.connected = False  # the provider is down
        skill, ctx = wired(rig, storage, clock)
        await skill.setup(ctx)  # type: ignore[arg-type]
        await skill.handle("set_timer", {"seconds": 5, "name": "tea"})
        clock.advance(seconds=6)
        await until(lambda: len(rig.coordinator.proactive.queue) == 1, "the timer queued")
        await settle()
        await skill.teardown()  # the daemon restarts before the provider returns
    assert len(await storage.list_settings(KEY_PREFIX)) == 1  # not lost

    async with Rig() as rig:  # the next start, provider up
        skill, ctx = wired(rig, storage, clock)
        await skill.setup(ctx)  # type: ignore[arg-type]
        await until(lambda: rig.coordinator.turn is not None, "the announcement begins")
        assert len(await storage.list_settings(KEY_PREFIX)) == 1  # asked, not yet heard
        rig.send(
            ResponseStarted("r1"),
            AudioChunk("r1", "i1", bytes(4800)),
            ResponseDone("r1", ResponseStatus.COMPLETED, had_audio=True),
        )
        await until(lambda: not storage_has_timers(storage), "the heard timer deleted")
        await skill.teardown()


def storage_has_timers(storage: MemoryStorage) -> bool:
    return any(key.startswith(KEY_PREFIX) for key in storage.data)
