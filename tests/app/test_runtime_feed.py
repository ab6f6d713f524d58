"""What the runtime puts on the watch feed: a reply's text stays with its own turn."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
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
    Role,
    TranscriptDelta,
    TranscriptDone,
)
from tests.config.fuzzcases import write_base
from tests.providers.gemini_frames import content, ready_core


@dataclass
class _Turn:
    turn_id: str


@dataclass
class _Coordinator:
    """Just what the feed reads: the turn under way (the coordinator gets the
    session's events from the session itself, not from the runtime)."""

    turn: _Turn | None = None


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


@pytest.mark.parametrize("end", [{"interrupted": True}, {"turnComplete": True}])
async def test_a_gemini_reply_keeps_its_turn_through_the_cores_final_transcript(
    tmp_path: Path, end: dict[str, bool]
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
    seen = await _feed(tmp_path, steps + [("t2", e) for e in ended])
    assert _said(seen) == [("t1", "Once upon a time")]
