"""tests/README.md (module → the tests that import it) is what the tests say today."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "test-map.py"

WITHOUT_A_TEST_FILE: dict[str, str] = {}
"""Modules that may have no test file of their own for now, each with why.
Rule 12 (docs/conventions.md) wants this empty: it only shrinks."""


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_map_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_map_is_current() -> None:
    script = load_script()
    readme = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    assert readme == script.current(), "tests/README.md is stale: run scripts/test-map.py"


def test_every_module_has_a_row() -> None:
    script = load_script()
    readme = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")}
    on_disk = {
        ".".join(("huxleyd", *p.relative_to(ROOT / "huxleyd").with_suffix("").parts))
        for p in (ROOT / "huxleyd").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert len(on_disk) > 100
    assert on_disk - rows == set()
    assert set(script.modules()) == rows


def test_each_import_form_maps_to_its_module(tmp_path: Path) -> None:
    script = load_script()
    pkg = tmp_path / "src" / "pkg"
    (pkg / "audio").mkdir(parents=True)
    for rel in (
        "__init__.py",
        "audio/__init__.py",
        "audio/playout.py",
        "audio/mixer.py",
        "lone.py",
    ):
        (pkg / rel).write_text("")
    tests = tmp_path / "tests"
    (tests / "audio").mkdir(parents=True)
    (tests / "audio" / "test_a.py").write_text(
        "from pkg.audio import playout\nimport pkg.lone\n"
        "def f():\n    from pkg.audio.mixer import Mixer\n"
    )
    (tests / "test_b.py").write_text("from pkg.audio import Something\nfrom . import pkg\n")
    (tests / "helper.py").write_text("import pkg.lone\n")  # not a test file
    known = script.modules({"pkg": pkg})
    assert script.build_map(tests, known) == {
        "pkg": [],
        "pkg.audio": ["tests/test_b.py"],
        "pkg.audio.mixer": ["tests/audio/test_a.py"],
        "pkg.audio.playout": ["tests/audio/test_a.py"],
        "pkg.lone": ["tests/audio/test_a.py"],
    }


def test_check_mode_agrees() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (0, "")


def is_package(packages: dict[str, Path], module: str) -> bool:
    top, *rest = module.split(".")
    return (packages[top].joinpath(*rest) / "__init__.py").is_file()


def untested(packages: dict[str, Path], mapping: dict[str, list[str]]) -> set[str]:
    """Modules (not packages) that no test file imports."""
    return {m for m, files in mapping.items() if not files and not is_package(packages, m)}


def test_every_module_is_imported_by_a_test_file() -> None:
    script = load_script()
    missing = untested(script.PACKAGES, script.build_map(ROOT / "tests", script.modules()))
    unexcused = sorted(missing - set(WITHOUT_A_TEST_FILE))
    assert unexcused == [], (
        "no test file imports these modules (docs/conventions.md rule 12): "
        "write a test of what each promises"
    )
    stale = sorted(set(WITHOUT_A_TEST_FILE) - missing)
    assert stale == [], "these have a test file now (or are gone): take them off the list"


def test_a_module_without_a_test_file_is_found(tmp_path: Path) -> None:
    script = load_script()
    pkg = tmp_path / "src" / "pkg"
    (pkg / "audio").mkdir(parents=True)
    for rel in ("__init__.py", "audio/__init__.py", "audio/mixer.py", "lone.py", "__main__.py"):
        (pkg / rel).write_text("")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("from pkg.audio import mixer\n")
    packages = {"pkg": pkg}
    mapping = script.build_map(tests, script.modules(packages))
    assert untested(packages, mapping) == {"pkg.lone", "pkg.__main__"}  # not the packages
