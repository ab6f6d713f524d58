"""No two public classes in one package of huxleyd share a name.

Two ``Activity`` classes once lived in ``turns/`` (a focus claimant and the
device's state for the LEDs): a reader, a grep and an import completion
could not tell them apart. Across packages a name may repeat (a doorbell's
``Request`` and the control socket's are far apart); within one, it may not.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "huxleyd"


def collisions(files: list[Path], base: Path) -> dict[str, list[str]]:
    """``{"package/Name": [files]}`` for each public top-level class name
    defined more than once in one first-level package under ``base``."""
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path in files:
        rel = path.relative_to(base)
        package = rel.parts[0] if len(rel.parts) > 1 else "."
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[f"{package}/{node.name}"].append(rel.as_posix())
    return {name: sorted(paths) for name, paths in where.items() if len(paths) > 1}


def test_no_package_defines_two_public_classes_of_one_name() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100
    assert collisions(files, PACKAGE) == {}


def test_the_scan_finds_a_collision_within_a_package_only(tmp_path: Path) -> None:
    for rel, body in {
        "turns/focus.py": "class Activity: ...\n",
        "turns/outputs.py": "class Activity: ...\nclass _Item: ...\n",
        "turns/other.py": "class _Item: ...\n",
        "audio/doorbell.py": "class Request: ...\n",
        "control/protocol.py": "class Request: ...\n",
    }.items():
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(body)
    found = collisions(sorted(tmp_path.rglob("*.py")), tmp_path)
    assert found == {"turns/Activity": ["turns/focus.py", "turns/outputs.py"]}
