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
- No circle of packages, of any length (``audio -> hardware -> turns -> audio``
  as much as ``a <-> b``): the packages form layers, bottom to top, and
  docs/architecture.md prints them in that order (``tests/doc_blocks.py``).
- The composition root (``huxleyd/app``) is not in the flow: no function of
  it reads the button and hands the press on, and none is a report relay
  (the ``build.Hooks`` callbacks it once held: ``on_provider_event``,
  ``on_activity``...). The check follows calls, not names: a callback of the
  root that passes its input into a call on a part (a field of ``Parts``) is
  a relay, and a loop that awaits one part and calls another is a pump. The button hands presses to the coordinator itself
  (``PushToTalkButton.pump``); reports are typed events the watch feed, the
  LEDs and systemd's status line subscribe to. (``tests/app/test_composition.py``
  checks the same on the running daemon: no frame of the root below the
  coordinator's inputs.)
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping
from pathlib import Path

from huxleyd.app.parts import Parts
from tests.test_import_cycles import ROOT, cycles, import_graph

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

FLOW_PARTS = frozenset({"coordinator", "button", "leds", "connection", "engine"})
"""The fields of ``Parts`` a press or a report travels between: the button, the
session, the engine, the coordinator and the LEDs (the watch feed and systemd's
status line subscribe to the coordinator straight). A call on one of these is
a call into the flow; the others (``host``, ``db``, ``volume``...) are what the
root supervises, which is its job."""


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


def package_graph(graph: Graph) -> dict[str, set[str]]:
    """The parts of ``huxleyd`` (:func:`part_of`) and the parts each imports."""
    parts: dict[str, set[str]] = {}
    for name, deps in graph.items():
        mine = parts.setdefault(part_of(name), set())
        mine.update(
            part_of(dep) for dep in deps if dep != "huxleyd" and part_of(dep) != part_of(name)
        )
    return parts


def package_circles(graph: Graph) -> list[list[str]]:
    """Each group of parts of ``huxleyd`` that import each other, directly or round a circle."""
    return cycles(package_graph(graph))


def _receiver_names(func: ast.expr) -> tuple[str | None, set[str]]:
    """The name a call's receiver starts from, and every name on the way
    (``self.parts.leds.set`` → ``("self", {"self", "parts", "leds"})``)."""
    names: set[str] = set()
    node: ast.expr = func.value if isinstance(func, ast.Attribute) else func
    while True:
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
            node = node.value
        elif isinstance(node, ast.Call | ast.Await):
            node = node.func if isinstance(node, ast.Call) else node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
    start = node.id if isinstance(node, ast.Name) else None
    return start, names | ({start} if start else set())


Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _handed_on(tree: ast.AST) -> tuple[set[str], list[ast.Lambda]]:
    """Functions (by name) and lambdas that this module hands to another object:
    an argument of a call whose receiver is not ``self``, or a value assigned to
    an attribute (``host.on_outcome = ...``). ``functools.partial(f, ...)`` is ``f``."""
    names: set[str] = set()
    lambdas: list[ast.Lambda] = []
    kept_home: set[int] = set()  # partial(...) calls that are arguments of self.method(...)
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.Call):
            func = node.func  # self.own_method(f) keeps f at home
            if isinstance(func, ast.Attribute) and ast.unparse(func.value) in {"self", "cls"}:
                kept_home.update(id(a) for a in node.args if isinstance(a, ast.Call))
                continue
            if id(node) in kept_home:
                continue
            values = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) for t in node.targets
        ):
            values = [node.value]
        for value in values:
            if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("partial"):
                value = value.args[0] if value.args else value
            if isinstance(value, ast.Lambda):
                lambdas.append(value)
            elif isinstance(value, ast.Attribute):
                names.add(value.attr)
            elif isinstance(value, ast.Name):
                names.add(value.id)
    return names, lambdas


def _parameters(fn: Function) -> set[str]:
    args = fn.args
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}


def _part_calls(fn: Function) -> list[tuple[ast.Call, set[str]]]:
    """Each call on a part in ``fn`` and the plain names it passes."""
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            _, names = _receiver_names(node.func)
            if names & FLOW_PARTS:
                passed = {
                    a.id
                    for a in [*node.args, *(k.value for k in node.keywords)]
                    if isinstance(a, ast.Name)
                }
                found.append((node, passed))
    return found


def _relays(fn: Function) -> bool:
    """Hands its own input to a part: a parameter passed into a call on a part."""
    params = _parameters(fn)
    return any(passed & params for _, passed in _part_calls(fn))


def _pumps(fn: Function) -> bool:
    """A loop that goes on (``while``, ``async for``) awaiting something of one part
    and calling another part in the same loop."""
    for loop in ast.walk(fn):
        if not isinstance(loop, ast.While | ast.AsyncFor):
            continue
        sources: set[str] = set()
        if isinstance(loop, ast.AsyncFor):
            sources |= _receiver_names(loop.iter)[1] & FLOW_PARTS
        for node in ast.walk(loop):
            if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
                sources |= _receiver_names(node.value.func)[1] & FLOW_PARTS
        called = {
            name
            for node in ast.walk(loop)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            for name in _receiver_names(node.func)[1] & FLOW_PARTS
        }
        if sources and called - sources:
            return True
    return False


def root_in_the_flow(sources: Mapping[str, str]) -> list[str]:
    """``module:function`` for each piece of the root that carries a press or a
    report from one part to another, whatever it is called: a function or lambda
    handed to another object that passes its input into a call on a part (a
    relay), or a loop that awaits one part and calls another (a pump). Parts are
    the fields of :class:`~huxleyd.app.parts.Parts` in :data:`FLOW_PARTS`."""
    found = []
    for module, text in sources.items():
        tree = ast.parse(text)
        handed, lambdas = _handed_on(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if _pumps(node) or (node.name in handed and _relays(node)):
                found.append(f"{module}:{node.name}")
        found.extend(f"{module}:<lambda line {fn.lineno}>" for fn in lambdas if _relays(fn))
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


def test_no_circle_of_packages() -> None:
    circles = package_circles(import_graph())
    assert circles == [], f"packages that import each other round a circle: {circles}"


def test_one_import_that_closes_a_three_package_circle_fails_the_wall() -> None:
    # audio -> hardware -> turns -> audio: no two of them import each other.
    graph = {name: set(deps) for name, deps in import_graph().items()}
    assert "huxleyd.hardware.devicetree" in graph and "huxleyd.audio.levels" in graph
    graph["huxleyd.audio.levels"].add("huxleyd.hardware.devicetree")
    parts = package_graph(graph)
    assert not any(
        a in parts[b] and b in parts[a]
        for a in ("huxleyd.audio", "huxleyd.hardware", "huxleyd.turns")
        for b in ("huxleyd.audio", "huxleyd.hardware", "huxleyd.turns")
        if a != b
    ), "the probe must close a circle of three, not a pair"
    circle = next(c for c in package_circles(graph) if "huxleyd.audio" in c)
    assert {"huxleyd.audio", "huxleyd.hardware", "huxleyd.turns"} <= set(circle)


def test_the_flow_parts_are_fields_of_parts() -> None:
    assert {field.name for field in dataclasses.fields(Parts)} >= FLOW_PARTS, "a part was renamed"


def test_the_root_is_not_in_the_flow() -> None:
    sources = root_sources()
    assert "huxleyd.app.runtime" in sources and "huxleyd.app.build" in sources
    found = root_in_the_flow(sources)
    assert found == [], f"the root is in the flow (a pump or a relay): {found}"


def test_the_root_wall_follows_calls_not_names() -> None:
    # The shapes the root held before, under names nobody listed.
    kept = {
        "huxleyd.app.control": (
            "def ptt(button):\n    button.press()\n"
            "def answer(self, level):\n    return self.parts.volume.set(level)\n"
            "async def retry(self, name):\n    while True:\n        await asyncio.sleep(1)\n"
        )
    }
    assert root_in_the_flow(kept) == []
    pump = (
        "async def carry_presses(leds, coordinator):\n"
        "    while True:\n"
        "        event = await leds.button.next_edge()\n"
        "        coordinator.begin()\n"
    )
    relay = (
        "class Runtime:\n"
        "    def start(self):\n        self.parts.coordinator.subscribe(self.forward)\n"
        "    def forward(self, news):\n        self.parts.leds.show(news)\n"
    )
    wired = "def build(c):\n    make(on_state=lambda status: coordinator.on_status(status))\n"
    sources = {**kept, "huxleyd.app.runtime": pump + relay, "huxleyd.app.build": wired}
    assert root_in_the_flow(sources) == [
        "huxleyd.app.build:<lambda line 2>",
        "huxleyd.app.runtime:carry_presses",
        "huxleyd.app.runtime:forward",
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
    assert package_circles(graph) == []
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
    assert package_circles(graph) == [
        ["huxleyd.audio", "huxleyd.pcm"],
        ["huxleyd.config", "huxleyd.control"],
    ]
