"""Case 8 (the runtime's side): the daemon's own tasks are supervised.

The provider task dies on a fatal handshake answer (HTTP 404: wrong URL or
model, as a misconfigured proxy answers for a while). Before, it died
unseen and the daemon stayed up without a provider for good. Now the death
is logged, the task restarted with backoff, and ``doctor`` shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from huxleyd.app.control import RuntimeControl
from huxleyd.sim.scenario import Scenario
from tests.e2e.harness import Rig
from tests.fakes.provider_peer import Fault, FaultPeer


async def test_a_dead_provider_task_is_logged_restarted_and_shown_by_doctor(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, Scenario(), skills=("system",))
    peer = FaultPeer([Fault(status=404), Fault()])
    sim: Any = peer  # the rig starts and stops it, and points the daemon at its url
    rig.sim = sim
    async with rig:  # returns once the provider is connected (after the restart)
        assert [h.status for h in peer.handshakes] == [404, 101]
        health = rig.rt.task_health()
        assert health["provider"].startswith("running, restarted 1x"), health
        assert set(health) == {"button", "leds", "provider", "clock"}
        checks = await RuntimeControl(rig.rt).doctor()
        [tasks] = [c for c in checks if c.name == "runtime tasks"]
        assert tasks.ok and "provider: running, restarted 1x" in tasks.detail
