"""The walls between layers that the package layout alone does not show.

Each wall is a static scan (the import graph of ``tests/test_import_cycles.py``:
lazy imports and imports under ``TYPE_CHECKING`` count, and importing
``pkg.sub`` counts as importing ``pkg``), and each has a test that the scan
sees a breaking import, so a wall cannot pass by seeing nothing.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_import_cycles import ROOT

PACKAGE = ROOT / "huxleyd"
MAX_TOP_LEVEL_MODULES = 8
"""Files directly in ``huxleyd/``, ``__init__.py`` and ``__main__.py`` counted:
the leaves every layer imports and the entry points; the rest lives in packages."""


def top_level_modules(package: Path = PACKAGE) -> list[str]:
    return sorted(path.name for path in package.glob("*.py"))


def test_the_top_floor_holds_at_most_eight_modules() -> None:
    found = top_level_modules()
    assert "__init__.py" in found
    assert len(found) <= MAX_TOP_LEVEL_MODULES, f"{len(found)} modules in huxleyd/: {found}"
