"""Case 2 (and 15): every function call gets exactly one output, whatever ends its reply.

The coordinator runs against recording fakes; the faults are the provider's:
a response that never sends ``response.done``, a barge-in before it ends, a
connection lost mid-reply. What must not be lost: an output per call.
"""

from __future__ import annotations

import collections

from huxleyd.providers.events import AudioChunk, ResponseStarted, ToolCall
from tests.fakes.clock import settle
from tests.fakes.turn_rig import Rig


def outputs_per_call(rig: Rig) -> collections.Counter[str]:
    return collections.Counter(
        args[0] for name, args in rig.provider.commands if name == "send_tool_output"
    )


async def test_a_finished_call_is_answered_when_its_response_never_ends() -> None:
    async with Rig(timeout_s=6.0) as rig:
        await rig.turn()
        await rig.tools_called("info", ends=False)  # no response.done, ever
        assert outputs_per_call(rig) == {}  # the response still runs: nothing yet
        await rig.sleeper.advance(6.0)  # the reply goes stale
        assert rig.coordinator.last_turn is not None, "the stale reply given up"
        assert rig.provider.outputs() == {"c1": '{"time": "10:00"}'}
        assert outputs_per_call(rig) == {"c1": 1}


async def test_a_finished_call_is_answered_on_barge_in_before_the_response_ends() -> None:
    async with Rig() as rig:
        await rig.turn()
        call = ToolCall("r1", "c1", "info", "{}")
        rig.send(ResponseStarted("r1"), call, AudioChunk("r1", "i1", bytes(4800)))
        await settle()
        rig.coordinator.press()  # barge-in: r1 never ends
        await settle()
        assert rig.provider.outputs() == {"c1": '{"time": "10:00"}'}
        assert outputs_per_call(rig) == {"c1": 1}


async def test_running_and_finished_calls_each_get_one_output_on_barge_in() -> None:
    async with Rig() as rig:
        await rig.turn()
        fast, slow = ToolCall("r1", "c1", "info", "{}"), ToolCall("r1", "c2", "hang", "{}")
        rig.send(ResponseStarted("r1"), fast, slow)
        await settle()
        rig.coordinator.press()
        await settle()
        rig.coordinator.press()  # a second barge-in owes nothing more
        await settle()
        assert rig.provider.outputs() == {"c1": '{"time": "10:00"}', "c2": '{"cancelled": true}'}
        assert outputs_per_call(rig) == {"c1": 1, "c2": 1}


async def test_a_new_turn_answers_the_calls_of_the_one_it_replaces() -> None:
    async with Rig() as rig:
        await rig.turn()
        await rig.tools_called("hang", ends=False)
        rig.coordinator.say("something else")  # a text turn replaces the running one
        await settle()
        assert outputs_per_call(rig) == {"c1": 1}
