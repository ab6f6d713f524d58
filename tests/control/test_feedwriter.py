"""What the watch feed's writer publishes: a reply's text stays with its own turn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from huxleyd.app.runtime import PERSONA_STRINGS
from huxleyd.control.feedwriter import FeedWriter
from huxleyd.control.watch import EventFeed, WatchEvent
from huxleyd.providers.events import (
    Event,
    ResponseDone,
    Role,
    TranscriptDelta,
    TranscriptDone,
)
from huxleyd.turns.news import TurnBegan, TurnEnded
from huxleyd.turns.state import TurnOutcome, TurnRecord, TurnSource
from tests.providers.gemini_frames import content, ready_core


async def _feed(steps: list[tuple[str | None, Event]]) -> list[WatchEvent]:
    """Send ``steps`` (the turn under way, then the event) and collect the feed.

    The turn under way reaches the writer as the coordinator tells it: a
    ``TurnEnded`` for the turn before, a ``TurnBegan`` for the new one."""
    feed = EventFeed()
    writer = FeedWriter(feed, strings=PERSONA_STRINGS.__getitem__)
    seen: list[WatchEvent] = []
    subscription = feed.subscribe()
    assert (await anext(subscription)).kind == "watching"
    current: TurnRecord | None = None
    for turn, step in steps:
        if (current.turn_id if current else None) != turn:
            if current is not None:
                current.outcome = TurnOutcome.INTERRUPTED
                writer.on_news(TurnEnded(current))
            current = TurnRecord(source=TurnSource.PTT, turn_id=turn) if turn else None
            if current is not None:
                writer.on_news(TurnBegan(current.turn_id, current.source))
        writer.on_provider_event(step)
    feed.publish("end")
    while (item := await asyncio.wait_for(anext(subscription), 5)).kind != "end":
        seen.append(item)
    await subscription.aclose()
    return seen


def _said(seen: list[WatchEvent]) -> list[tuple[str | None, Any]]:
    return [(e.turn, e.fields["text"]) for e in seen if e.kind == "said"]


async def test_a_reply_cut_by_a_barge_in_keeps_its_own_turn() -> None:
    # The cut reply's transcript ends after the press began turn t2.
    seen = await _feed(
        [
            ("t1", TranscriptDelta(Role.ASSISTANT, "item-1", "It is a quarter ")),
            ("t2", TranscriptDone(Role.ASSISTANT, "item-1", "It is a quarter")),
            ("t2", TranscriptDelta(Role.ASSISTANT, "item-2", "Yes?")),
            ("t2", TranscriptDone(Role.ASSISTANT, "item-2", "Yes?")),
        ],
    )
    assert _said(seen) == [("t1", "It is a quarter"), ("t2", "Yes?")]


@pytest.mark.parametrize("end", [{"interrupted": True}, {"turnComplete": True}])
async def test_a_gemini_reply_keeps_its_turn_through_the_cores_final_transcript(
    end: dict[str, bool],
) -> None:
    # Gemini sends no final transcript; its core makes one at the turn's end,
    # which comes (a barge-in, or the answer played out) once turn t2 began.
    core = ready_core()
    core.receive(content(outputTranscription={"text": "Once upon "}))
    core.receive(content(outputTranscription={"text": "a time"}))
    spoken = core.events_received()
    core.receive(content(**end))
    ended = core.events_received()
    assert any(isinstance(e, ResponseDone) for e in ended)
    steps: list[tuple[str | None, Event]] = [("t1", e) for e in spoken]
    seen = await _feed(steps + [("t2", e) for e in ended])
    assert _said(seen) == [("t1", "Once upon a time")]
