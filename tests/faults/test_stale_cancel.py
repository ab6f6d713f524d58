"""Case 15: no stale ``response.cancel`` / ``conversation.item.truncate`` after a
turn whose response never finished (a fatal error, a lost connection).

The reply of such a turn is over when the turn ends; the next press must not
cancel or truncate it again: on the new session those ids mean nothing and
the provider answers with errors.
"""

from __future__ import annotations

from huxleyd.providers.base import ConnectionState
from huxleyd.providers.events import AudioChunk, ProviderErrorEvent, ResponseStarted
from huxleyd.turns.state import TurnOutcome
from tests.fakes.clock import settle
from tests.fakes.turn_rig import Rig, reply


def commands_since(rig: Rig, mark: int) -> list[str]:
    return [name for name, _ in rig.provider.commands[mark:]]


async def test_no_stale_cancel_or_truncate_after_a_fatal_error_mid_reply() -> None:
    async with Rig() as rig:
        await rig.turn()
        rig.send(*reply("r1", "i1", chunks=2))
        rig.send(ProviderErrorEvent("server_error", "the session ended", recoverable=False))
        await settle()  # the speech already played out: the turn ends
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.FAILED
        rig.coordinator.on_connection(ConnectionState.RECONNECTING)
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        mark = len(rig.provider.commands)
        await rig.turn()
        sent = commands_since(rig, mark)
        assert "cancel_response" not in sent and "truncate" not in sent, sent


async def test_no_stale_cancel_or_truncate_after_the_connection_dropped_mid_reply() -> None:
    async with Rig() as rig:
        await rig.turn()
        rig.send(ResponseStarted("r1"), AudioChunk("r1", "i1", bytes(4800)))
        await settle()
        rig.coordinator.on_connection(
            ConnectionState.RECONNECTING
        )  # no response.done will ever come
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        mark = len(rig.provider.commands)
        await rig.turn()
        sent = commands_since(rig, mark)
        assert "cancel_response" not in sent and "truncate" not in sent, sent
        rig.send(*reply("r2", "i2"))  # and the next reply plays
        await settle()
        assert rig.audio.sources["speech"].writes[-1] == ("i2", 4800)
