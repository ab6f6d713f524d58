"""Case 11: a quick re-press on a slow link does not fail the next turn.

Press, release (the reply is asked for), press again before the provider
said ``response.created``; release. On a slow link the first request's
response starts only now, and is cancelled; the second turn's response
follows. The first must not be taken for the second turn's reply (that
gave the error chime and no answer).
"""

from __future__ import annotations

from huxleyd.providers.events import ResponseDone, ResponseStarted, ResponseStatus
from huxleyd.turns.state import TurnOutcome
from tests.fakes.clock import settle
from tests.fakes.turn_rig import Rig, done, reply


async def test_a_re_press_before_the_reply_started_does_not_fail_the_next_turn() -> None:
    async with Rig() as rig:
        await rig.turn()  # the first request goes out; the link is slow
        await rig.turn()  # pressed again before anything came back
        rig.send(
            ResponseStarted("r1"),  # the first request's response, cancelled at once
            ResponseDone("r1", ResponseStatus.CANCELLED),
        )
        await settle()
        rig.send(*reply("r2", "i2"), done("r2"))  # the second turn's answer
        await settle()
        last = rig.coordinator.last_turn
        assert last is not None and last.outcome is TurnOutcome.ANSWERED
        assert "error" not in rig.audio.earcon_names()  # no error chime
        assert rig.audio.sources["speech"].writes == [("i2", 4800)] * 3
