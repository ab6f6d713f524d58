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
  import only ``errors``.
- No two packages import each other: the packages form layers, bottom to top.
"""

from __future__ import annotations

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
    "huxleyd.schema": {"huxleyd", "huxleyd.errors"},
}
"""A leaf module and everything of ``huxleyd`` it may import (``huxleyd`` itself:
importing ``huxleyd.errors`` runs the package's init, which imports nothing)."""

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
        assert crossings(graph, importer, imported) == [], f"{importer} imports {imported}"


def test_the_vocabulary_leaves_import_only_the_error_types() -> None:
    graph = import_graph()
    assert leaf_breaches(graph) == []


def test_no_two_packages_import_each_other() -> None:
    assert mutual_packages(import_graph()) == []


def test_each_wall_sees_an_import_that_breaks_it() -> None:
    # A small graph of the real shape, each wall kept, then one import per wall.
    graph: dict[str, set[str]] = {
        "huxleyd": set(),
        "huxleyd.errors": {"huxleyd"},
        "huxleyd.pcm": {"huxleyd", "huxleyd.errors"},
        "huxleyd.schema": {"huxleyd", "huxleyd.errors"},
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
    assert [crossings(graph, a, b) for a, b in NEVER] == [
        ["huxleyd.providers.core -> huxleyd.audio.mixer"],
        ["huxleyd.config.load -> huxleyd.control.server"],
    ]
    assert leaf_breaches(graph) == [
        "huxleyd.pcm -> huxleyd.audio.mixer",
        "huxleyd.schema -> huxleyd.logs",
    ]
    assert mutual_packages(graph) == [
        "huxleyd.audio <-> huxleyd.pcm",
        "huxleyd.config <-> huxleyd.control",
    ]
