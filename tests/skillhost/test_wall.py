"""The host's package imports the standard library, ``huxley_sdk`` and itself only.

It runs with the skills environment's interpreter, which has none of the
daemon's dependencies (and must not: a skill could then import them). The
tests that start hosts show it runs there; this scan says why it will keep
running there, and fails on the import that would break it.
"""

from __future__ import annotations

import ast
import sys

from tests.fakes.wheels import ROOT

PACKAGE = ROOT / "huxleyd" / "skillhost" / "hostpath" / "huxley_skillhost"
ALLOWED = set(sys.stdlib_module_names) | {"huxley_sdk", "__future__"}


def foreign_imports(source: str) -> list[str]:
    """Top-level modules ``source`` imports that the host's interpreter may lack."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [n for n in names if n.split(".")[0] not in ALLOWED]
    return found


def test_the_hosts_package_imports_nothing_of_the_daemons() -> None:
    files = sorted(PACKAGE.glob("*.py"))
    assert {f.name for f in files} >= {"child.py", "link.py", "__main__.py"}
    for path in files:
        assert foreign_imports(path.read_text()) == [], path


def test_the_scan_sees_a_daemon_import() -> None:
    assert foreign_imports("from huxleyd.logs import get_logger\nimport numpy\n") == [
        "huxleyd.logs",
        "numpy",
    ]
