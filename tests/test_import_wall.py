"""The wall: skills import huxley_sdk only; huxley_sdk imports nothing of huxleyd."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = "huxleyd"


def wall_violations(paths: list[Path]) -> list[str]:
    """``file:line imports X`` for every import of ``huxleyd`` in ``paths``."""
    found: list[str] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name == FORBIDDEN or name.startswith(FORBIDDEN + "."):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    return found


def test_first_party_skills_import_only_the_sdk() -> None:
    skills = sorted((ROOT / "huxleyd" / "skills").rglob("*.py"))
    assert skills, "no first-party skills found"
    assert wall_violations(skills) == []


def test_sdk_imports_nothing_of_the_runtime() -> None:
    sdk = sorted((ROOT / "sdk" / "src" / "huxley_sdk").rglob("*.py"))
    assert sdk
    assert wall_violations(sdk) == []


def test_the_wall_catches_a_skill_that_imports_the_runtime() -> None:
    bad = ROOT / "tests" / "fixtures" / "bad_skill" / "bad_skill.py"
    assert wall_violations([bad]) == [
        "tests/fixtures/bad_skill/bad_skill.py:6 imports huxleyd.storage.db"
    ]


def test_relative_imports_inside_skills_do_not_escape() -> None:
    # A relative import climbing out of huxleyd/skills would reach the runtime.
    for path in (ROOT / "huxleyd" / "skills").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                raise AssertionError(f"{path}:{node.lineno} climbs out of the skills package")
