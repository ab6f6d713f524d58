"""The skills' prompt_context in the session instructions: at start, refreshed
when a tool changed it, and never re-sent when nothing changed."""

from __future__ import annotations

import json
from typing import Any

from huxley_sdk import InjectPriority, ToolDefinition, ToolResult
from huxleyd.providers.events import ResponseStarted, ToolCall
from huxleyd.skillhost.host import SkillHost
from huxleyd.turns.coordinator import Coordinator
from huxleyd.turns.instructions import SessionInstructions, compose
from huxleyd.turns.parts import TurnPersona, TurnPorts
from tests.fakes.clock import settle
from tests.fakes.turn_ports import RecordingAudio, RecordingProvider, RecordingVolume
from tests.fakes.turn_rig import done, reply


class Notes:
    """Huxley-shaped: no setup or teardown; its context lists the notes."""

    name = "notes"

    def __init__(self) -> None:
        self.notes: list[str] = []

    @property
    def tools(self) -> list[ToolDefinition]:
        return [ToolDefinition("add_note", "Add a note.", {"type": "object", "properties": {}})]

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        self.notes.append(str(args.get("text", "")))
        return ToolResult(json.dumps({"added": True}))

    def prompt_context(self) -> str:
        return f"Notes: {', '.join(self.notes)}" if self.notes else ""


class Silent:
    name = "silent"
    tools: list[ToolDefinition] = []  # noqa: RUF012

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult("{}")

    def prompt_context(self) -> str:
        raise RuntimeError("broken context")


def configures(provider: RecordingProvider) -> list[str]:
    return [str(arg) for name, arg in provider.commands if name == "configure"]


class Rig:
    def __init__(self) -> None:
        self.provider = RecordingProvider()
        self.skill = Notes()
        skills: list[Any] = [Silent(), self.skill]  # Huxley-shaped: no setup/teardown
        self.host = SkillHost(skills)
        self.session = SessionInstructions(
            "Be brief.",
            context=self.host.prompt_context,
            apply=lambda text: self.provider.configure(instructions=text, tools=[], voice="v"),
        )
        self.coordinator = Coordinator(
            TurnPorts(
                provider=self.provider,
                audio=RecordingAudio(),
                volume=RecordingVolume(),
                host=self.host,
            ),
            persona=TurnPersona(instructions="Be brief.", session_instructions=self.session),
        )

    async def turn(self) -> None:
        self.coordinator.press()
        await settle()
        self.coordinator.release()
        await settle()


def test_compose_skips_empty_parts() -> None:
    assert compose("Be brief.\n", "") == "Be brief."
    assert compose("", "Notes: a") == "Notes: a"
    assert compose("Be brief.", " Notes: a ") == "Be brief.\n\nNotes: a"


async def test_context_is_sent_at_start_refreshed_after_a_tool_and_not_repeated() -> None:
    rig = Rig()
    rig.skill.notes.append("milk")
    await rig.coordinator.start()
    try:
        rig.session.refresh()  # what the runtime does at start
        assert configures(rig.provider) == ["Be brief.\n\nNotes: milk"]

        rig.coordinator.say("add eggs")
        call = ToolCall("r1", "c1", "add_note", json.dumps({"text": "eggs"}))
        rig.provider.commands.clear()
        rig.coordinator.on_provider_event(ResponseStarted("r1"))
        rig.coordinator.on_provider_event(call)
        rig.coordinator.on_provider_event(done("r1", call, audio=False))
        await settle()
        # the new context goes out after the tool output, before the follow-up
        assert rig.provider.names()[-3:] == ["send_tool_output", "configure", "request_response"]
        assert configures(rig.provider) == ["Be brief.\n\nNotes: milk, eggs"]
        for event in [*reply("r2", "i2"), done("r2")]:
            rig.coordinator.on_provider_event(event)
        await settle()

        rig.provider.commands.clear()
        rig.coordinator.say("what do I need?")  # nothing changed: no session update
        await settle()
        assert configures(rig.provider) == []
        assert rig.session.updates == 2
    finally:
        await rig.coordinator.close()


async def test_an_inject_speaks_with_the_current_context() -> None:
    rig = Rig()
    await rig.coordinator.start()
    try:
        rig.session.refresh()
        rig.skill.notes.append("call mum")
        await rig.coordinator.proactive.inject_turn("Remind them.", priority=InjectPriority.NORMAL)
        await settle()
        requests = [arg for name, arg in rig.provider.commands if name == "request_response"]
        assert requests[-1] == "Be brief.\n\nNotes: call mum\n\nRemind them."
        assert configures(rig.provider)[-1] == "Be brief.\n\nNotes: call mum"
    finally:
        await rig.coordinator.close()


async def test_a_ptt_turn_refreshes_before_listening() -> None:
    rig = Rig()
    await rig.coordinator.start()
    try:
        rig.session.refresh()
        rig.skill.notes.append("bread")
        rig.provider.commands.clear()
        rig.coordinator.press()
        assert rig.provider.names()[:2] == ["configure", "start_turn"]
    finally:
        await rig.coordinator.close()


def test_a_failing_context_is_skipped() -> None:
    skills: list[Any] = [Silent(), Notes()]
    host = SkillHost(skills)
    assert host.prompt_context() == ""
    assert host.prompt_context() == ""  # and logged once, not per turn
