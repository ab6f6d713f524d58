#!/usr/bin/env python3
"""Write tests/README.md: for each module of huxleyd and huxley_sdk, the test
files that import it.

Usage: ``python scripts/test-map.py`` (rewrite the file) or
``python scripts/test-map.py --check`` (exit 1 when the file is stale;
``tests/test_test_map.py`` runs the same comparison).

Tests are named by behaviour, not by module, so a reader looking for the tests
of ``audio/playout.py`` needs a map. It is read from the tests' own imports
(an AST scan that also counts imports inside functions and under
``TYPE_CHECKING``): ``from huxleyd.audio import playout`` and
``from huxleyd.audio.playout import PlayoutClock`` both map to
``huxleyd.audio.playout``. Only ``test_*.py`` files count; a module exercised
only through another (the engine drives the mixer) is listed under "through
others" so the gap is visible rather than hidden.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "tests" / "README.md"
PACKAGES = {"huxleyd": ROOT / "huxleyd", "huxley_sdk": ROOT / "sdk" / "src" / "huxley_sdk"}

HEADER = """\
# Where the tests are

Tests are named by the behaviour they pin down (`test_full_disk.py`,
`test_idle_path.py`), not by module. This map goes the other way: for each
module, the test files that import it. It is generated from the tests'
imports by `scripts/test-map.py`, and `tests/test_test_map.py` fails when it
is stale: after adding or moving a test, run
`.venv/bin/python scripts/test-map.py`.

Every module has at least one (docs/conventions.md rule 12): a package's
`__init__` may show none, and `tests/test_test_map.py` fails for any other
module that no test file imports, apart from a short list there, each
with why. Such a module is exercised only through others for now; that is
shown, not hidden.

| module | test files that import it |
|---|---|
"""


def modules(packages: dict[str, Path] = PACKAGES) -> list[str]:
    """Every module's dotted name (packages by their ``__init__``)."""
    names: list[str] = []
    for top, root in packages.items():
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            names.append(".".join((top, *parts)))
    return sorted(names)


def imported(tree: ast.Module, known: set[str]) -> set[str]:
    """The known modules a test file imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # ``from huxleyd.audio import playout`` names a module, not the package.
            submodules = {f"{node.module}.{a.name}" for a in node.names} & known
            found |= submodules
            if node.module in known and len(submodules) < len(node.names):
                found.add(node.module)
    return found


def test_files(tests: Path) -> Iterable[Path]:
    return sorted(tests.rglob("test_*.py"))


def build_map(tests: Path, known: list[str]) -> dict[str, list[str]]:
    """Module → the test files (relative to ``tests``'s parent) that import it."""
    users: defaultdict[str, list[str]] = defaultdict(list)
    for path in test_files(tests):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for module in imported(tree, set(known)):
            users[module].append(path.relative_to(tests.parent).as_posix())
    return {module: sorted(users.get(module, [])) for module in known}


def render(mapping: dict[str, list[str]]) -> str:
    rows = []
    for module, files in mapping.items():
        cell = ", ".join(f"`{f}`" for f in files) if files else "(none: through others)"
        rows.append(f"| `{module}` | {cell} |")
    return HEADER + "\n".join(rows) + "\n"


def current() -> str:
    return render(build_map(ROOT / "tests", modules()))


def main(argv: list[str]) -> int:
    text = current()
    if argv[1:] == ["--check"]:
        if README.read_text(encoding="utf-8") != text:
            print(f"{README.relative_to(ROOT)} is stale: run scripts/test-map.py", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print("usage: test-map.py [--check]", file=sys.stderr)
        return 2
    README.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
