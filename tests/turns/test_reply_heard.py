"""A reply the provider finished sending is heard whatever the session does next.

The coordinator with recording ports: the speech source's ``drained`` stands
for the played position reaching the end of what was written.
"""

from __future__ import annotations

import asyncio

from huxleyd.providers.base import ConnectionState
from huxleyd.providers.events import ProviderErrorEvent
from huxleyd.turns.state import TurnOutcome, TurnState
from tests.fakes.clock import settle
from tests.fakes.turn_rig import Rig, done, reply


async def test_the_session_cap_while_a_finished_reply_plays_leaves_it_answered() -> None:
    # OpenAI at its 60-minute cap: session_expired, then close 1001, while the
    # last reply (all of it received) is still playing.
    async with Rig() as rig:
        await rig.turn()
        rig.audio.speech_drained.clear()  # the reply is still on its way to the speaker
        rig.send(*reply("r1", "i1"), done("r1"))
        await settle()
        assert rig.state() is TurnState.APPLYING_SIDE_EFFECTS
        rig.send(ProviderErrorEvent("session_expired", "60 minutes", recoverable=False))
        rig.coordinator.on_connection(ConnectionState.CONNECTING)
        await settle()
        assert ("flush", "speech") not in rig.audio.log, "what arrived was cut"
        rig.audio.speech_drained.set()  # played out
        await settle()
        rig.coordinator.on_connection(ConnectionState.CONNECTED)
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.ANSWERED
        assert "error" not in rig.audio.earcon_names()


async def test_a_reply_that_never_finished_still_fails_with_the_connection() -> None:
    # Something the user should have heard was not: FAILED, as before; what
    # did arrive plays out first, then the one error cue.
    async with Rig() as rig:
        await rig.turn()
        rig.audio.speech_drained.clear()  # what arrived is still playing
        rig.send(*reply("r1", "i1"))
        await settle()
        rig.coordinator.on_connection(ConnectionState.RECONNECTING, 1)
        await settle()
        assert rig.coordinator.turn is not None, "the turn ended before what arrived played"
        assert "error" not in rig.audio.earcon_names()
        rig.audio.speech_drained.set()  # played out
        await settle()
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.FAILED
        assert rig.audio.earcon_names().count("error") == 1


async def test_reply_heard_waits_for_the_turn_to_end_and_its_speech_to_play_out() -> None:
    async with Rig() as rig:
        await rig.coordinator.reply_heard()  # no turn: at once
        await rig.turn()
        rig.audio.speech_drained.clear()
        heard = asyncio.create_task(rig.coordinator.reply_heard())
        rig.send(*reply("r1", "i1"))
        await settle()
        assert not heard.done(), "a reply still streaming was taken as heard"
        rig.send(done("r1"))
        await settle()
        assert not heard.done(), "a reply still playing was taken as heard"
        rig.audio.speech_drained.set()
        await asyncio.wait_for(heard, 5)
        assert rig.coordinator.turn is None


async def test_a_turn_lost_when_the_provider_ends_for_good_gets_the_failure_cue_once() -> None:
    # A refused key mid-reply: the error event, then the connection fails for
    # good. One cue for the lost turn, the key's, after what arrived played.
    from huxleyd.providers.base import EndReason

    async with Rig() as rig:
        await rig.turn()
        rig.audio.speech_drained.clear()  # what arrived is still playing
        rig.send(*reply("r1", "i1"))
        rig.send(ProviderErrorEvent("invalid_api_key", "refused", recoverable=False))
        await settle()
        rig.coordinator.on_connection(ConnectionState.FAILED, ended=EndReason.KEY_REFUSED)
        await settle()
        cues = [c for c in rig.audio.earcon_names() if c in ("error", "key_refused", "offline")]
        assert cues == [], "a cue over what was still playing"
        rig.audio.speech_drained.set()
        await settle()
        cues = [c for c in rig.audio.earcon_names() if c in ("error", "key_refused", "offline")]
        assert cues == ["key_refused"]
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.FAILED
