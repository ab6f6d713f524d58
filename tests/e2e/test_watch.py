"""End to end: what ``huxleyctl watch`` streams during a spoken turn with a tool.

The real runtime, the simulator speaking OpenAI's protocol with input
transcription on, the system skill's clock tool. A person without a
speaker must be able to follow the turn from the stream alone: what was
heard, which tool ran with which result, what was said, how it ended.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.app.control import RuntimeControl
from huxleyd.control.render import watch_line
from huxleyd.control.watch import WatchEvent
from huxleyd.providers.base import ConnectionState, ConnectionStatus
from huxleyd.sim.scenario import ResponseSpec, Scenario, ToolCallSpec, TurnSpec
from tests.e2e.harness import RATE, Rig, scenario_skill_installed, until

SCENARIO = Scenario(
    turns=(
        TurnSpec(
            hear="what time is it",
            responses=(
                ResponseSpec(tool_calls=(ToolCallSpec(name="get_current_time"),)),
                ResponseSpec(say="It is a quarter past ten.", tone_hz=330.0, duration_ms=300),
            ),
        ),
    )
)


@pytest.fixture(autouse=True)
def scenario_skill(tmp_path: Path) -> Iterator[None]:
    with scenario_skill_installed(tmp_path):
        yield


async def _collect(rig: Rig, seen: list[WatchEvent], subscribed: asyncio.Event) -> None:
    async for event in RuntimeControl(rig.rt).watch():
        seen.append(event)
        subscribed.set()


async def test_a_spoken_turn_with_a_tool_can_be_followed_from_the_watch_stream(
    tmp_path: Path,
) -> None:
    transcription = 'transcription_model = "gpt-4o-mini-transcribe"'
    async with Rig(tmp_path, SCENARIO, provider_lines=transcription) as rig:
        seen: list[WatchEvent] = []
        subscribed = asyncio.Event()
        watcher = asyncio.create_task(_collect(rig, seen, subscribed))
        await asyncio.wait_for(subscribed.wait(), 10)
        button = rig.rt.parts.button
        button.press()
        rig.backend.feed_mic(bytes(int(0.4 * RATE) * 2))
        await until(lambda: rig.backend.mic_queued_frames() == 0, "mic consumed")
        button.release()
        await until(lambda: any(e.kind == "turn" for e in seen), "the turn's end on the stream")
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)

    lines = [watch_line(e) for e in seen]
    turn_events = [e for e in seen if e.turn is not None and e.kind != "state"]
    kinds = [e.kind for e in turn_events]
    assert kinds == ["heard", "tool", "result", "said", "turn"], lines
    heard, tool, result, said, done = turn_events
    assert heard.fields["text"] == "what time is it"
    assert tool.fields["name"] == "get_current_time"
    assert result.fields["name"] == "get_current_time" and result.fields["error"] is None
    assert "time" in json.loads(result.fields["output"])
    assert said.fields["text"] == "It is a quarter past ten."
    assert done.fields["outcome"] == "answered" and done.fields["tools"] == "get_current_time"
    assert len({e.turn for e in turn_events}) == 1, "every event names the same turn"
    states = [e.fields["state"] for e in seen if e.kind == "state"]
    assert states[:2] == ["listening", "thinking"] and "speaking" in states
    assert states[-1] == "idle"
    assert seen[0].kind == "watching"


async def test_volume_through_huxleyctl_is_logged_and_watched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with Rig(tmp_path, Scenario()) as rig:
        seen: list[WatchEvent] = []
        subscribed = asyncio.Event()
        watcher = asyncio.create_task(_collect(rig, seen, subscribed))
        await asyncio.wait_for(subscribed.wait(), 10)
        with caplog.at_level("INFO", logger="huxleyd"):
            assert await RuntimeControl(rig.rt).set_volume(40) == 40
        await until(lambda: any(e.kind == "volume" for e in seen), "the volume event")
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    logged = [r for r in caplog.records if getattr(r, "huxley_event", None) == "volume_changed"]
    assert len(logged) == 1
    fields = logged[0].huxley_fields  # type: ignore[attr-defined]
    assert fields["by"] == "huxleyctl" and fields["level"] == 40 and fields["previous"] == 100
    volume = next(e for e in seen if e.kind == "volume")
    assert volume.fields["level"] == 40 and volume.fields["by"] == "huxleyctl"


async def test_a_slow_watcher_loses_the_oldest_events_and_is_told() -> None:
    from huxleyd.control.watch import EventFeed

    feed = EventFeed(max_queued=3)
    events = feed.subscribe()
    assert (await anext(events)).kind == "watching"
    for i in range(5):
        feed.publish("state", state=f"s{i}")
    got = [await anext(events) for _ in range(3)]
    assert [e.fields["state"] for e in got] == ["s2", "s3", "s4"]
    assert got[0].dropped == 2 and got[1].dropped == 0
    await events.aclose()
    assert feed.subscribers == 0


async def test_the_personas_strings_are_what_text_surfaces_say(tmp_path: Path) -> None:
    import dataclasses

    from huxleyd.config.load import LanguageOverrides, PersonaString
    from huxleyd.control.errors import CommandFailedError

    async with Rig(tmp_path, Scenario()) as rig:
        strings = {
            PersonaString.TOO_SHORT: "No te he oído.",
            PersonaString.OFFLINE: "No tengo conexión.",
        }
        persona = dataclasses.replace(
            rig.rt.config.persona,
            language="es",
            i18n={"es": LanguageOverrides(strings=strings)},
        )
        rig.rt.config = dataclasses.replace(rig.rt.config, persona=persona)
        seen: list[WatchEvent] = []
        subscribed = asyncio.Event()
        watcher = asyncio.create_task(_collect(rig, seen, subscribed))
        await asyncio.wait_for(subscribed.wait(), 10)
        button = rig.rt.parts.button
        button.press()
        button.release()  # no audio: too short
        await until(lambda: any(e.kind == "notice" for e in seen), "the too-short notice")
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        notice = next(e for e in seen if e.kind == "notice")
        assert notice.fields["what"] == "No te he oído."
        rig.rt.connection_status = ConnectionStatus(ConnectionState.OFFLINE)
        with pytest.raises(CommandFailedError, match=r"No tengo conexión\."):
            await RuntimeControl(rig.rt).say("hola")
        rig.rt.connection_status = ConnectionStatus(ConnectionState.CONNECTED)


LONG = Scenario(
    turns=tuple(
        TurnSpec(responses=(ResponseSpec(say=f"answer {n}", tone_hz=330.0, duration_ms=4000),))
        for n in range(3)
    )
)


async def test_watch_names_what_really_cut_the_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 41: ``watch`` said "cut by the button" for a cut made by a typed
    ``say``. The words now come from what the coordinator did: a ``say`` that
    supersedes the reply, then the button, each named as itself."""
    caplog.set_level("INFO", logger="huxleyd")  # the daemon's level: the journal feeds watch
    async with Rig(tmp_path, LONG, skills=("system",)) as rig:
        control = RuntimeControl(rig.rt)
        seen: list[WatchEvent] = []
        subscribed = asyncio.Event()
        watcher = asyncio.create_task(_collect(rig, seen, subscribed))
        await asyncio.wait_for(subscribed.wait(), 10)

        def speaking() -> bool:
            """An answer is being heard (its sound left the speaker: a cut names it)."""
            heard = rig.rt.parts.engine.stats().output_peak_dbfs > -40
            return bool(rig.coordinator.activity == "speaking" and heard)

        def cuts() -> list[str]:
            return [
                str(e.fields["what"])
                for e in seen
                if e.kind == "notice" and "cut by" in str(e.fields.get("what"))
            ]

        try:
            await control.say("tell me a long story")
            await until(speaking, "the first answer speaks")
            await control.say("no, something else")  # supersedes the answer being spoken
            await until(lambda: len(cuts()) == 1, "the first cut on the stream")
            assert cuts() == ["barge-in: the answer was cut by a typed say (huxleyctl say)"]
            await until(speaking, "the second answer speaks")
            rig.rt.parts.button.press()  # barge-in
            await until(lambda: len(cuts()) == 2, "the second cut on the stream")
            rig.rt.parts.button.release()
        finally:
            watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    assert cuts() == [
        "barge-in: the answer was cut by a typed say (huxleyctl say)",
        "barge-in: the answer was cut by the button",
    ]
    lines = [watch_line(e) for e in seen if e.kind == "notice"]
    assert any("cut by a typed say" in line for line in lines), lines
