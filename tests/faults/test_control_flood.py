"""Case 10: a flood of idle control-socket clients locks nobody out.

Sixteen connections (the default ``max_clients``) from one group member
that never send a line: another ``huxleyctl`` must still be answered at
once, not after the 600 s idle timeout.
"""

from __future__ import annotations

from pathlib import Path

from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.server import ControlServer
from tests.e2e.harness import until
from tests.fakes.control_client import LineClient
from tests.fakes.control_handler import FakeControlHandler


async def test_sixteen_idle_connections_do_not_lock_out_the_next_client(tmp_path: Path) -> None:
    settings = ControlSettings(socket_path=tmp_path / "control.sock", socket_group=None)
    async with ControlServer(FakeControlHandler(), settings) as server:
        idle = [await LineClient.connect(settings.socket_path) for _ in range(16)]
        await until(lambda: server.client_count >= 8, "the flood is being served")
        admin = await LineClient.connect(settings.socket_path)
        reply = await admin.call(1, "volume")
        assert reply["ok"] is True, reply  # answered now, not refused
        # One uid holds at most max_clients_per_uid of the slots.
        assert server.client_count <= settings.max_clients_per_uid + 1
        for client in [*idle, admin]:
            await client.close()
