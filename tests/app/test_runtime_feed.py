"""What the runtime puts on the watch feed: a reply's text stays with its own turn."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from huxleyd.app.parts import Overrides, Parts
from huxleyd.app.runtime import Runtime
from huxleyd.config.load import load_config
from huxleyd.control.watch import WatchEvent
from huxleyd.providers.events import (
    Event,
    ResponseDone,
    ResponseStatus,
    Role,
    TranscriptDelta,
    TranscriptDone,
)
from tests.config.fuzzcases import write_base


@dataclass
class _Turn:
    turn_id: str


@dataclass
class _Coordinator:
    """Just what the feed reads: the turn under way, and where events go on."""

    turn: _Turn | None = None
    events: list[Event] = field(default_factory=list)

    def on_provider_event(self, event: Event) -> None:
        self.events.append(event)


@dataclass
class _Parts:
    coordinator: _Coordinator


async def _feed(tmp_path: Path, steps: list[tuple[str | None, Event]]) -> list[WatchEvent]:
    """Send ``steps`` (the turn under way, then the event) and collect the feed."""
    runtime = Runtime(load_config(write_base(tmp_path)), Overrides(env={}))
    coordinator = _Coordinator()
    runtime.built = cast(Parts, _Parts(coordinator))
    seen: list[WatchEvent] = []
    feed = runtime.feed.subscribe()
    assert (await anext(feed)).kind == "watching"
    for turn, step in steps:
        coordinator.turn = _Turn(turn) if turn else None
        runtime.on_provider_event(step)
    runtime.feed.publish("end")
    while (item := await asyncio.wait_for(anext(feed), 5)).kind != "end":
        seen.append(item)
    await feed.aclose()
    return seen


def _said(seen: list[WatchEvent]) -> list[tuple[str | None, Any]]:
    return [(e.turn, e.fields["text"]) for e in seen if e.kind == "said"]


async def test_a_reply_cut_by_a_barge_in_keeps_its_own_turn(tmp_path: Path) -> None:
    # The cut reply's transcript ends after the press began turn t2.
    seen = await _feed(
        tmp_path,
        [
            ("t1", TranscriptDelta(Role.ASSISTANT, "item-1", "It is a quarter ")),
            ("t2", TranscriptDone(Role.ASSISTANT, "item-1", "It is a quarter")),
            ("t2", TranscriptDelta(Role.ASSISTANT, "item-2", "Yes?")),
            ("t2", TranscriptDone(Role.ASSISTANT, "item-2", "Yes?")),
        ],
    )
    assert _said(seen) == [("t1", "It is a quarter"), ("t2", "Yes?")]


@pytest.mark.parametrize("status", [ResponseStatus.CANCELLED, ResponseStatus.COMPLETED])
async def test_without_a_final_transcript_the_text_still_keeps_its_turn(
    tmp_path: Path, status: ResponseStatus
) -> None:
    # Gemini sends no final transcript: the parts are published at response.done.
    seen = await _feed(
        tmp_path,
        [
            ("t1", TranscriptDelta(Role.ASSISTANT, "item-1", "Once upon ")),
            ("t1", TranscriptDelta(Role.ASSISTANT, "item-1", "a time")),
            ("t2", ResponseDone("resp-1", status)),
        ],
    )
    assert _said(seen) == [("t1", "Once upon a time")]
