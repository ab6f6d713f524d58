"""Only the composition root knows it is one: no layer imports ``huxleyd.app``.

The layers are wired *by* ``huxleyd/app``; a layer that imported it back would
make the root a dependency of what it builds (and an import cycle). ``python -m huxleyd``
and the ``huxleyd`` console script (``start.py``, which checks the SDK first)
run the real daemon, so they may; the demo lives in the root (``app/demo.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "huxleyd"
MAY_IMPORT_THE_ROOT = {PACKAGE / "__main__.py", PACKAGE / "start.py"}


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, lazily and under TYPE_CHECKING included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_layer_imports_the_composition_root() -> None:
    offenders = {
        str(path.relative_to(PACKAGE.parent)): sorted(
            n for n in imports_of(path) if n == "huxleyd.app" or n.startswith("huxleyd.app.")
        )
        for path in PACKAGE.rglob("*.py")
        if PACKAGE / "app" not in path.parents and path not in MAY_IMPORT_THE_ROOT
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_an_import_of_the_root(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("if TYPE_CHECKING:\n    from huxleyd.app.parts import Parts\n")
    assert "huxleyd.app.parts" in imports_of(module)
