"""One fact, one journal line: ``journalctl HUXLEY_EVENT=claim_started`` counts claims.

The real daemon (the e2e rig: simulator on loopback, WAV card, mock pins)
runs a text turn the provider refuses with an error (an error event for
OpenAI, a close code for Gemini), a turn it answers, a skill's input claim
and a frame no core understands, with the journald handler of
``tests/test_journal_fields.py`` (a recording ``journal.send``) on the
daemon's and the skills' loggers. Each fact must reach the journal once.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.logs import JournalFieldsHandler
from huxleyd.providers.openai_core import OpenAIRealtimeCore
from huxleyd.sim.scenario import ErrorSpec, ResponseSpec, Scenario, TurnSpec
from huxleyd.sim.server import SimDialect
from tests.e2e.harness import Rig, scenario_skill_installed, until
from tests.test_journal_fields import RecordingSender


@pytest.fixture
def journal() -> Iterator[RecordingSender]:
    sender = RecordingSender()
    handler = JournalFieldsHandler(sender)
    loggers = [logging.getLogger(name) for name in ("huxleyd", "huxley")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    yield sender
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def events(journal: RecordingSender) -> collections.Counter[str]:
    return collections.Counter(
        fields["HUXLEY_EVENT"] for _, fields in journal.calls if "HUXLEY_EVENT" in fields
    )


# OpenAI's error is an event (xAI shares that core); Gemini's is a close code.
@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_a_turn_an_error_and_a_claim_each_reach_the_journal_once(
    tmp_path: Path, journal: RecordingSender, kind: SimDialect
) -> None:
    refused = TurnSpec(responses=(ResponseSpec(error=ErrorSpec(code="server_error")),))
    answered = TurnSpec(responses=(ResponseSpec(say="words", tone_hz=440, duration_ms=300),))
    with scenario_skill_installed(tmp_path):
        async with Rig(tmp_path, Scenario(turns=(refused, answered)), kind=kind) as rig:
            coordinator = rig.rt.parts.coordinator
            coordinator.say("first")
            # One turn, one error: OpenAI's refused request is asked again
            # after the silence time-out; Gemini's turn is lost with the
            # connection the error closed.
            await until(lambda: events(journal)["turn_done"] >= 1, "the first turn")
            coordinator.say("second")
            await until(lambda: events(journal)["turn_done"] >= 2, "the second turn")
            await until(rig.idle, "idle after the answer")
            skill = rig.skill("scenario")
            handle = await skill.start_claim()
            handle.cancel()
            await until(lambda: "claim:natural" in skill.events, "the claim ended")
            # A frame no core understands, through the real core the way the
            # transport feeds it (receive, then hand its events on).
            core = OpenAIRealtimeCore()
            core.receive("not json")
            for event in core.events_received():
                coordinator.on_provider_event(event)
    counts = events(journal)
    assert counts["provider_error"] == 1, counts
    assert counts["provider_error"] + counts["provider_closed_with_error"] == 1, counts
    assert counts["provider_protocol_error"] == 1, counts
    assert counts["claim_started"] == 1 and counts["claim_ended"] == 1, counts
    assert counts["turn_done"] == 2, counts
    # An event name said from two places is one fact told twice (the
    # protocol core and the turn layer; the claims registry and its user).
    assert sites_per_event(journal) == {}


def sites_per_event(journal: RecordingSender) -> dict[str, set[str]]:
    """Event names that reached the journal from more than one function."""
    sites: dict[str, set[str]] = collections.defaultdict(set)
    for _, fields in journal.calls:
        if "HUXLEY_EVENT" in fields:
            sites[fields["HUXLEY_EVENT"]].add(
                f"{Path(fields['CODE_FILE']).name}:{fields['CODE_FUNC']}"
            )
    return {event: where for event, where in sites.items() if len(where) > 1}
