"""The fault matrix in ``docs/reliability.md`` cannot drift from the suite.

Every row names tests that exist (file and function), and every fault test
in this folder is named by a row.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
HERE = Path(__file__).resolve().parent
NOT_FAULT_TESTS = {"test_matrix.py", "test_soak.py"}
"""This checker, and the soak (described in the prose, not a matrix row)."""

REF = re.compile(r"`(tests/faults/[\w/]+\.py)::(\w+)`")


def matrix_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].isdigit():
            rows.append((cells[0], REF.findall(cells[4])))
    return rows


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_row_names_tests_that_exist() -> None:
    rows = matrix_rows()
    assert [case for case, _ in rows] == [
        "1", "2", "3", "4", "5", "6", "8", "9", "10", "11", "13", "14", "15",
        "16", "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31",
        "32", "33", "34", "35", "36", "37", "38", "39", "40", "41", "42", "43", "44", "45", "46",
        "47", "48", "49", "50", "51",
    ]  # fmt: skip
    for case, refs in rows:
        assert refs, f"case {case}: the row names no test"
        for file, name in refs:
            path = ROOT / file
            assert path.is_file(), f"case {case}: {file} does not exist"
            assert name in defined_tests(path), f"case {case}: {file} has no {name}"


def test_every_fault_test_is_in_the_matrix() -> None:
    named = {(file, name) for _, refs in matrix_rows() for file, name in refs}
    for path in sorted(HERE.glob("test_*.py")):
        if path.name in NOT_FAULT_TESTS:
            continue
        for name in defined_tests(path):
            file = str(path.relative_to(ROOT))
            assert (file, name) in named, f"{file}::{name} is not in docs/reliability.md"
