"""The repository stands alone: no file cites a document or a path outside it.

The rules the code follows are in ``docs/conventions.md``; a reader of the
repository must never be sent to a file they do not have.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Built from parts, so this file does not match itself.
OUTSIDE = tuple(
    "".join(parts)
    for parts in (
        ("STYLE", ".md"),
        ("DESIGN", ".md"),
        ("../", "shared"),
        ("/work", "/"),
    )
)


def tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    files = [ROOT / name for name in out.decode().split("\0") if name]
    return [f for f in files if f.is_file() and b"\0" not in f.read_bytes()[:4096]]


def test_no_tracked_file_cites_a_file_outside_the_repository() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {needle}"
        for path in tracked_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        for needle in OUTSIDE
        if needle in line
    ]
    assert not hits, "cites a file outside the repository:\n" + "\n".join(hits)


def test_the_cited_conventions_page_has_every_rule_cited() -> None:
    page = (ROOT / "docs" / "conventions.md").read_text()
    rules = set(re.findall(r"^(\d+)\. ", page, re.M))
    cited = {
        number
        for path in tracked_text_files()
        if path.suffix == ".py"
        for number in re.findall(r"conventions rule (\d+)", path.read_text(errors="replace"))
    }
    assert cited, "no module cites a rule: the search is broken"
    assert cited <= rules, f"rules cited but not written: {sorted(cited - rules)}"
