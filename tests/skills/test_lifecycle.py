"""Huxley's optional lifecycle on the host: config_schema at load, reconfigure
with changed config, and client events mapped onto this device."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any, ClassVar

import pytest

from huxley_sdk import SkillContext, ToolDefinition, ToolResult
from huxley_sdk.testing import make_test_context
from huxleyd.errors import ConfigError
from huxleyd.skillhost.events import ClientEvents
from huxleyd.skillhost.host import SkillHost
from huxleyd.skillhost.sources import skill_config


class Configured:
    name = "cfg"
    tools: ClassVar[list[ToolDefinition]] = []
    config_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"max": {"type": "integer", "minimum": 1}, "voice": {"type": "string"}},
        "required": ["max"],
        "additionalProperties": False,
    }
    seen: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    async def handle(self, tool_name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult("{}")

    async def setup(self, ctx: SkillContext) -> None:
        self.seen.append(("setup", dict(ctx.config)))

    async def reconfigure(self, ctx: SkillContext) -> None:
        self.seen.append(("reconfigure", dict(ctx.config)))


INSTALLED = {"cfg": EntryPoint(name="cfg", value=f"{__name__}:Configured", group="huxley.skills")}


def load(config: dict[str, Any]) -> SkillHost:
    return SkillHost.load(
        ["cfg"], installed=INSTALLED, configs={"cfg": config}, persona_file="personas/home.toml"
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "skills.cfg.max: required argument missing"),
        ({"max": "ten"}, "skills.cfg.max: expected integer, got 'ten'"),
        ({"max": 0}, "skills.cfg.max: 0 is below the minimum 1"),
        (
            {"max": 3, "colour": "red"},
            "skills.cfg.colour: unknown key (expected one of: max, voice)",
        ),
    ],
)
def test_config_schema_is_checked_at_load_naming_file_and_key(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(config)
    assert str(info.value) == f"personas/home.toml: {message}"


def test_from_is_not_part_of_what_the_schema_sees() -> None:
    host = load({"max": 3, "from": "(unknown distribution)"})
    assert host.sources == {"cfg": "(unknown distribution)"}


async def test_reconfigure_gets_the_changed_config_only() -> None:
    Configured.seen.clear()
    host = load({"max": 3})

    def make(name: str, config: dict[str, Any]) -> SkillContext:
        return make_test_context(name=name, config=config)

    await host.setup_all(make, {"cfg": {"max": 3}})
    assert host.changed_configs({"cfg": {"max": 3}}) == []
    assert host.changed_configs({"cfg": {"max": 3}}, force=True) == ["cfg"]
    assert host.changed_configs({"cfg": {"max": 4}}) == ["cfg"]
    assert await host.reconfigure(make, {"cfg": {"max": 4}}, ["cfg"]) == ["cfg"]
    assert Configured.seen == [("setup", {"max": 3}), ("reconfigure", {"max": 4})]

    with pytest.raises(ConfigError, match=r"skills\.cfg\.max: 0 is below the minimum 1"):
        await host.reconfigure(make, {"cfg": {"max": 0}}, ["cfg"], persona_file="p.toml")
    assert Configured.seen[-1] == (
        "reconfigure",
        {"max": 4},
    )  # a rejected config is not handed over
    assert host.changed_configs({"cfg": {"max": 4}}) == []


async def test_client_events_reach_every_subscriber_and_failures_stay_isolated() -> None:
    events = ClientEvents()
    got: list[tuple[str, dict[str, Any]]] = []

    async def radio(data: dict[str, Any]) -> None:
        got.append(("radio", data))

    async def broken(data: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    events.subscriber("radio")("station", radio)
    events.subscriber("broken")("station", broken)
    assert events.keys() == {"station": ["radio", "broken"]}
    assert await events.deliver("station", {"name": "jazz"}) == ["radio"]
    assert await events.deliver("station", ["not", "a", "dict"]) == ["radio"]
    assert got == [("radio", {"name": "jazz"}), ("radio", {})]
    assert await events.deliver("nobody-listens") == []
    events.drop("radio")
    assert events.keys() == {"station": ["broken"]}

    await events.emitter("radio")("now_playing", {"station": "jazz"})
    assert events.emitted == [("radio", "now_playing", {"station": "jazz"})]


async def test_a_tables_i18n_overrides_for_the_persona_language_are_merged() -> None:
    Configured.seen.clear()
    table = {"max": 3, "voice": "calm", "i18n": {"es": {"voice": "tranquila"}, "fr": {"max": 0}}}
    host = SkillHost.load(
        ["cfg"], installed=INSTALLED, configs={"cfg": table}, persona_file="p.toml", language="es"
    )
    await host.setup_all(lambda name, cfg: make_test_context(name=name, config=cfg), {"cfg": table})
    assert Configured.seen == [("setup", {"max": 3, "voice": "tranquila"})]
    with pytest.raises(ConfigError, match=r"skills\.cfg\.max: 0 is below the minimum 1"):
        SkillHost.load(
            ["cfg"],
            installed=INSTALLED,
            configs={"cfg": table},
            persona_file="p.toml",
            language="fr",
        )


def test_skill_config_drops_from_and_i18n() -> None:
    raw = {"from": "x", "a": 1, "i18n": {"en": {"a": 2, "b": 3}}}
    assert skill_config(raw) == {"a": 1}
    assert skill_config(raw, "en") == {"a": 2, "b": 3}
    assert skill_config(raw, "de") == {"a": 1}
