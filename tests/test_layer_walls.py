"""The walls between layers that the package layout alone does not show.

Each wall reads the import graph of ``tests/test_import_cycles.py`` (a static
scan: lazy imports and imports under ``TYPE_CHECKING`` count, and importing
``pkg.sub`` counts as importing ``pkg``). Each check is a function of the
graph, and a test adds the import that would break it, so no wall can pass
by seeing nothing.

- ``huxleyd/`` holds at most 8 modules of its own; the rest lives in packages.
- ``providers`` never imports ``audio``: the PCM vocabulary is the leaf
  ``huxleyd.pcm``, and a provider says why a session ended (``EndReason``),
  never which earcon plays (``turns/cues.py`` does).
- ``config`` never imports ``control`` (``control`` imports ``config``).
- ``huxleyd.pcm`` and ``huxleyd.schema`` are leaves: of ``huxleyd`` they
  import only ``errors``; ``huxleyd.bus`` (the typed event bus every layer
  publishes on) imports only ``logs``.
- No two packages import each other: the packages form layers, bottom to top.
- The composition root (``huxleyd/app``) is not in the flow: no function of
  it reads the button and hands the press on, and none is a report relay
  (the ``build.Hooks`` callbacks it once held: ``on_provider_event``,
  ``on_activity``...). The button hands presses to the coordinator itself
  (``PushToTalkButton.pump``); reports are typed events the watch feed, the
  LEDs and systemd's status line subscribe to. (``tests/app/test_composition.py``
  checks the same on the running daemon: no frame of the root below the
  coordinator's inputs.)
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from tests.test_import_cycles import ROOT, import_graph

PACKAGE = ROOT / "huxleyd"
MAX_TOP_LEVEL_MODULES = 8
"""Files directly in ``huxleyd/``, ``__init__.py`` and ``__main__.py`` counted:
the leaves every layer imports and the entry points; the rest lives in packages."""

NEVER: list[tuple[str, str]] = [
    ("huxleyd.providers", "huxleyd.audio"),
    ("huxleyd.config", "huxleyd.control"),
]
"""(importer, imported): no module under the first imports one under the second."""

LEAVES: dict[str, set[str]] = {
    "huxleyd.pcm": {"huxleyd", "huxleyd.errors"},
    "huxleyd.schema": {"huxleyd", "huxleyd.errors", "huxleyd.schema.names"},
    "huxleyd.bus": {"huxleyd", "huxleyd.logs"},
}
"""A leaf module and everything of ``huxleyd`` it may import (``huxleyd`` itself:
importing ``huxleyd.errors`` runs the package's init, which imports nothing)."""

ROOT_RELAYS = {
    "on_provider_event",
    "on_connection_state",
    "on_tool_outcome",
    "on_activity",
    "on_degraded_press",
    "on_turn_done",
    "on_mute",
}
"""The report relays the root once held: a function of ``app/`` by one of these
names is the root back in the flow."""

Graph = Mapping[str, set[str]]


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def crossings(graph: Graph, importer: str, imported: str) -> list[str]:
    """``a -> b`` for every module under ``importer`` that imports one under ``imported``."""
    return sorted(
        f"{name} -> {dep}"
        for name, deps in graph.items()
        if _under(name, importer)
        for dep in deps
        if _under(dep, imported)
    )


def leaf_breaches(graph: Graph, leaves: Mapping[str, set[str]] = LEAVES) -> list[str]:
    return sorted(
        f"{leaf} -> {dep}" for leaf, allowed in leaves.items() for dep in graph[leaf] - allowed
    )


def part_of(module: str) -> str:
    """The package (``huxleyd.audio``) or top-level module (``huxleyd.logs``) a module is in."""
    return ".".join(module.split(".")[:2])


def mutual_packages(graph: Graph) -> list[str]:
    """``a <-> b`` for every two parts of ``huxleyd`` that import each other."""
    edges = {
        (part_of(name), part_of(dep))
        for name, deps in graph.items()
        for dep in deps
        if dep != "huxleyd" and part_of(name) != part_of(dep)
    }
    return sorted(f"{a} <-> {b}" for a, b in edges if (b, a) in edges and a < b)


def root_in_the_flow(sources: Mapping[str, str]) -> list[str]:
    """``module:function`` for each function that reads the button (``next_event``)
    and hands it on (``press``/``release``), or that is named as a relay."""
    found = []
    for module, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls = {
                call.func.attr
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            }
            pumps = "next_event" in calls and bool(calls & {"press", "release"})
            if pumps or node.name in ROOT_RELAYS:
                found.append(f"{module}:{node.name}")
    return sorted(found)


def root_sources(package: Path = PACKAGE / "app") -> dict[str, str]:
    return {f"huxleyd.app.{p.stem}": p.read_text() for p in sorted(package.glob("*.py"))}


def top_level_modules(package: Path = PACKAGE) -> list[str]:
    return sorted(path.name for path in package.glob("*.py"))


def test_the_top_floor_holds_at_most_eight_modules() -> None:
    found = top_level_modules()
    assert "__init__.py" in found
    assert len(found) <= MAX_TOP_LEVEL_MODULES, f"{len(found)} modules in huxleyd/: {found}"


def test_no_layer_imports_across_its_walls() -> None:
    graph = import_graph()
    for importer, imported in NEVER:
        assert any(_under(m, importer) for m in graph), f"{importer} is gone: update the wall"
        found = crossings(graph, importer, imported)
        assert found == [], f"{importer} imports {imported}: {found}"


def test_the_vocabulary_leaves_import_only_the_error_types() -> None:
    breaches = leaf_breaches(import_graph())
    assert breaches == [], f"a leaf imports beyond what it may: {breaches}"


def test_no_two_packages_import_each_other() -> None:
    mutual = mutual_packages(import_graph())
    assert mutual == [], f"packages that import each other: {mutual}"


def test_the_root_is_not_in_the_flow() -> None:
    sources = root_sources()
    assert "huxleyd.app.runtime" in sources and "huxleyd.app.build" in sources
    found = root_in_the_flow(sources)
    assert found == [], f"the root is in the flow (a pump or a relay): {found}"


def test_the_root_wall_sees_a_pump_and_a_relay() -> None:
    # The shapes the root held before: the button's pump and a report relay.
    kept = {"huxleyd.app.control": "def ptt(button):\n    button.press()\n"}
    assert root_in_the_flow(kept) == []
    pump = (
        "async def pump_button(button, coordinator):\n"
        "    while True:\n"
        "        event = await button.next_event()\n"
        "        coordinator.press()\n"
    )
    relay = (
        "class Runtime:\n    def on_activity(self, activity):\n        self.leds.set(activity)\n"
    )
    sources = {**kept, "huxleyd.app.runtime": pump + relay}
    assert root_in_the_flow(sources) == [
        "huxleyd.app.runtime:on_activity",
        "huxleyd.app.runtime:pump_button",
    ]


def test_each_wall_sees_an_import_that_breaks_it() -> None:
    # A small graph of the real shape, each wall kept, then one import per wall.
    graph: dict[str, set[str]] = {
        "huxleyd": set(),
        "huxleyd.errors": {"huxleyd"},
        "huxleyd.pcm": {"huxleyd", "huxleyd.errors"},
        "huxleyd.schema": {"huxleyd", "huxleyd.errors"},
        "huxleyd.bus": {"huxleyd", "huxleyd.logs"},
        "huxleyd.audio.mixer": {"huxleyd", "huxleyd.pcm"},
        "huxleyd.providers.core": {"huxleyd", "huxleyd.pcm"},
        "huxleyd.config.load": {"huxleyd", "huxleyd.schema", "huxleyd.audio.mixer"},
        "huxleyd.control.server": {"huxleyd", "huxleyd.config.load"},
    }
    assert [crossings(graph, a, b) for a, b in NEVER] == [[], []]
    assert leaf_breaches(graph) == []
    assert mutual_packages(graph) == []
    graph["huxleyd.providers.core"].add("huxleyd.audio.mixer")
    graph["huxleyd.config.load"].add("huxleyd.control.server")
    graph["huxleyd.pcm"].add("huxleyd.audio.mixer")
    graph["huxleyd.schema"].add("huxleyd.logs")
    graph["huxleyd.bus"].add("huxleyd.turns.news")
    assert [crossings(graph, a, b) for a, b in NEVER] == [
        ["huxleyd.providers.core -> huxleyd.audio.mixer"],
        ["huxleyd.config.load -> huxleyd.control.server"],
    ]
    assert leaf_breaches(graph) == [
        "huxleyd.bus -> huxleyd.turns.news",
        "huxleyd.pcm -> huxleyd.audio.mixer",
        "huxleyd.schema -> huxleyd.logs",
    ]
    assert mutual_packages(graph) == [
        "huxleyd.audio <-> huxleyd.pcm",
        "huxleyd.config <-> huxleyd.control",
    ]
