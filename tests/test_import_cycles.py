"""No import cycle anywhere in huxleyd, counting every import the code can run.

A static scan (AST) of ``huxleyd/``: module-level imports, imports inside
functions (the lazy ones) and imports under ``if TYPE_CHECKING:`` all count,
because each is a dependency a reader has to hold in mind and a lazy import
only hides a cycle until someone moves it to the top. ``from pkg import name``
counts as importing ``pkg.name`` when that is a submodule, and ``pkg``
otherwise. Importing ``pkg.sub`` also counts as importing ``pkg``, as Python
runs a package's ``__init__`` before any of its submodules: that is how
``from huxleyd.sim import wire`` once loaded the whole simulator. A cycle is
reported as the list of modules it goes through.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "huxleyd"

_BEING_FIXED: set[frozenset[str]] = set()
"""Cycles other engineers remove in this same round (none left: every cycle fails)."""


def module_files(root: Path, package: str) -> dict[str, Path]:
    """``huxleyd.audio.mixer`` → its file, for every module of ``package`` under ``root``."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules of ``known`` that ``module`` (at ``path``) imports, anywhere in its body."""
    modules = set(known)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = (
                _resolve_relative(module, is_package, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else source)
    with_parents = set(found)
    for name in found:
        parts = name.split(".")
        with_parents.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return {name for name in with_parents if name in modules and name != module}


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    files = module_files(root, package)
    return {name: imports_of(name, path, files) for name, path in files.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_huxleyd_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100, "the scan found too few modules: is the root right?"
    found = [group for group in cycles(graph) if frozenset(group) not in _BEING_FIXED]
    assert found == [], f"import cycles (each a group of modules that import each other): {found}"


def test_a_lazy_or_type_checking_import_closes_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A package whose init imports nothing."""\n')
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import c\n"
    )
    (pkg / "c.py").write_text("def later() -> None:\n    from pkg import a\n")
    (pkg / "d.py").write_text("import pkg.a\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg", "pkg.sub", "pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg", "pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_a_package_init_that_imports_its_server_closes_a_cycle(tmp_path: Path) -> None:
    # The simulator's old shape: session imports a sibling, which runs the
    # package init first, which imports the server, which imports session.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.server import Server\n")
    (pkg / "server.py").write_text("from pkg.session import Session\nclass Server: ...\n")
    (pkg / "session.py").write_text("from pkg import wire\nclass Session: ...\n")
    (pkg / "wire.py").write_text("FRAME = 1\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.session"] == {"pkg", "pkg.wire"}
    assert graph["pkg.wire"] == set()
    assert cycles(graph) == [["pkg", "pkg.server", "pkg.session"]]
    (pkg / "__init__.py").write_text('"""Light: imports nothing."""\n')
    assert cycles(import_graph(tmp_path, "pkg")) == []
