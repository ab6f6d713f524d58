"""The helpers every first-party skill's tools share live in one place."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from huxleyd.skills.support import require_ctx, tool_error

SKILLS = Path(__file__).resolve().parents[2] / "huxleyd" / "skills"
SHARED = {"tool_error", "require_ctx"}


def own_copies(paths: list[Path]) -> list[str]:
    """``file:line name`` for every function a skill module defines that
    repeats a shared helper (by name, with or without a leading underscore,
    as a module function or a method)."""
    found: list[str] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                bare = node.name.lstrip("_")
                if bare in SHARED or bare == "error":
                    found.append(f"{path.name}:{node.lineno} {node.name}")
    return sorted(found)


def test_no_skill_keeps_its_own_copy_of_a_shared_helper() -> None:
    skills = sorted(p for p in SKILLS.glob("*.py") if p.name != "support.py")
    assert len(skills) >= 6
    assert own_copies(skills) == []


def test_the_scan_finds_a_copied_helper(tmp_path: Path) -> None:
    copied = tmp_path / "copied.py"
    copied.write_text(
        "class S:\n"
        "    def _require_ctx(self):\n"
        "        return None\n"
        "def _error(code, message):\n"
        "    return None\n"
    )
    assert own_copies([copied]) == ["copied.py:2 _require_ctx", "copied.py:4 _error"]


def test_tool_error_puts_the_code_and_message_first() -> None:
    result = tool_error("no_memos", "there are no voice notes", count=0)
    assert json.loads(result.output) == {
        "error": "no_memos",
        "message": "there are no voice notes",
        "count": 0,
    }
    assert list(json.loads(result.output)) == ["error", "message", "count"]


def test_require_ctx_names_the_skill_when_setup_never_ran() -> None:
    with pytest.raises(RuntimeError, match=r"^radio: setup\(\) was not called$"):
        require_ctx(None, "radio")
