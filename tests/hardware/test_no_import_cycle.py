"""The hardware package imports in a line: patterns ← drivers ← controller.

Every import counts, also one inside a function (a lazy import) or under
``if TYPE_CHECKING:``: a cycle hidden that way still ties the modules
together for a reader and for a refactoring.
"""

from __future__ import annotations

import ast
from pathlib import Path

import huxleyd

PACKAGE_ROOT = Path(huxleyd.__file__).resolve().parent


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: str, *, root: Path = PACKAGE_ROOT.parent) -> dict[str, set[str]]:
    """Module → the modules of ``package`` (found below ``root``) it imports anywhere."""
    folder = root.joinpath(*package.split("."))
    modules = {_module_name(p, root): p for p in sorted(folder.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
                # ``from pkg import mod`` imports the module ``pkg.mod`` when there is one.
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt, [*path, node])
            if cycle is not None:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle is not None:
            return cycle
    return None


def test_the_hardware_package_has_no_import_cycle() -> None:
    graph = import_graph("huxleyd.hardware")
    assert "huxleyd.hardware.led_patterns" in graph, "the graph must see the package"
    cycle = find_cycle(graph)
    assert cycle is None, " → ".join(cycle or [])


def test_the_led_layers_import_downwards_only() -> None:
    graph = import_graph("huxleyd.hardware")
    patterns = "huxleyd.hardware.led_patterns"
    drivers = "huxleyd.hardware.led_drivers"
    controller = "huxleyd.hardware.led_controller"
    apa102 = "huxleyd.hardware.apa102"
    assert not graph[patterns] & {drivers, controller, apa102}, "patterns know no driver"
    assert controller not in graph[drivers] and controller not in graph[apa102]
    assert patterns in graph[apa102] and drivers not in graph[apa102]


def test_the_check_finds_a_cycle_closed_by_a_lazy_or_type_checking_import(
    tmp_path: Path,
) -> None:
    """The check can fail: the old shape (a factory importing its driver inside
    a function, the driver importing the factory's module) is a cycle."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "leds.py").write_text("def make():\n    from pkg.apa102 import Driver\n")
    (pkg / "apa102.py").write_text("from pkg.leds import make\n")
    assert find_cycle(import_graph("pkg", root=tmp_path)) == [
        "pkg.apa102",
        "pkg.leds",
        "pkg.apa102",
    ]
    (pkg / "apa102.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import leds\n"
    )
    assert find_cycle(import_graph("pkg", root=tmp_path)) is not None
    (pkg / "apa102.py").write_text("")
    assert find_cycle(import_graph("pkg", root=tmp_path)) is None
