"""Modules and functions within the sizes docs/conventions.md allows, or saying why not.

A module of ``huxleyd`` over :data:`MODULE_LINES` lines, or a function over
:data:`FUNCTION_LINES`, is a place a reader has to hold too much at once.
Where one is longer for a reason, the reason is written beside it, where the
next engineer reads it: a comment line ``# longer than N lines: why`` just
above the ``def`` (above its decorators), or anywhere in the module's first
30 lines for the module. A reason with no words after the colon does not count.

:data:`PENDING_FOR_THE_LEAD` names what is over in the three packages other
branches were reshaping while this test was written (``audio/``,
``control/``, ``skillhost/``): the lead folds each in (a split, or a reason
beside it) after merging them, and the list only shrinks.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES = 600
FUNCTION_LINES = 50
_REASON = re.compile(r"#\s*longer than \d+ lines:\s*\S")

_WHY = "pending for the lead: its package was being reshaped on another branch"
PENDING_FOR_THE_LEAD: dict[str, str] = {}
"""Over the sizes with no reason beside them yet, by ``file`` or ``file:function``."""


def oversized(path: Path, root: Path = ROOT) -> list[str]:
    """``file: N lines`` and ``file:function: N lines`` for each size over the
    limits that has no reason written beside it."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    name = str(path.relative_to(root))
    found = []
    if len(lines) > MODULE_LINES and not any(_REASON.search(line) for line in lines[:30]):
        found.append(f"{name}: {len(lines)} lines")
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        above = lines[first - 2] if first >= 2 else ""
        if length > FUNCTION_LINES and not _REASON.search(above):
            found.append(f"{name}:{node.name}: {length} lines")
    return found


def where(finding: str) -> str:
    """``file`` or ``file:function`` of a finding (its line count dropped)."""
    return finding.rsplit(": ", 1)[0]


@functools.cache
def findings() -> tuple[str, ...]:
    return tuple(f for path in sorted((ROOT / "huxleyd").rglob("*.py")) for f in oversized(path))


def test_every_module_and_function_is_within_its_size_or_says_why() -> None:
    found = [f for f in findings() if where(f) not in PENDING_FOR_THE_LEAD]
    assert found == [], (
        "over the sizes of docs/conventions.md, with no reason beside:\n" + "\n".join(found)
    )


def test_the_pending_list_names_only_what_is_still_over() -> None:
    over = {where(f) for f in findings()}
    folded = sorted(set(PENDING_FOR_THE_LEAD) - over)
    assert folded == [], f"within the sizes now (or says why): drop from the list: {folded}"


def test_a_long_function_needs_a_reason_with_words(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LINES))
    module = tmp_path / "m.py"
    module.write_text(f"def long():\n{body}")
    assert oversized(module, tmp_path) == ["m.py:long: 51 lines"]
    module.write_text(f"# longer than 50 lines:\ndef long():\n{body}")
    assert oversized(module, tmp_path) == ["m.py:long: 51 lines"]
    module.write_text(
        f"# longer than 50 lines: one table, read top-down\n@cache\ndef long():\n{body}"
    )
    assert oversized(module, tmp_path) == []
    module.write_text("x = 1\n" * (MODULE_LINES + 1))
    assert oversized(module, tmp_path) == ["m.py: 601 lines"]
