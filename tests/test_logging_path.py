"""One logging path: huxleyd code gets its loggers from :mod:`huxleyd.logs`.

The journald contract (field names, ``HUXLEY_EVENT``, redaction, repeat
limiting) is the daemon's, so it lives in ``huxleyd.logs``; the SDK keeps only
what Huxley's SDK has (the ``SkillLogger`` Protocol) and has no logging
module to import from. A static scan (AST) fails on any huxleyd module that
takes a logger or a logging name from anywhere else in our code, or logs
straight through the standard library (a module-level
``logging.getLogger(...)``, or ``logging.info(...)`` on the root logger):
such lines carry no event name and no fields, so journald cannot select them.
Handing a stdlib logger to a library (websockets) or adding a handler stays
allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk" / "src" / "huxley_sdk"
THE_PATH = "huxleyd.logs"
LOGGING_NAMES = frozenset(
    {"EventLogger", "get_logger", "FIELDS_ATTR", "EVENT_ATTR", "JournalFieldsHandler"}
)
"""What only huxleyd.logs defines: importing one from elsewhere is another path."""


def parsed(paths: list[Path], root: Path) -> Iterator[tuple[str, ast.Module]]:
    """Each file's path relative to ``root``, and its syntax tree."""
    for path in paths:
        text = path.read_text(encoding="utf-8")
        yield str(path.relative_to(root)), ast.parse(text, filename=str(path))


def _logging_imports(node: ast.Import | ast.ImportFrom) -> list[str]:
    """What ``node`` imports that is a logging path other than huxleyd.logs."""
    if isinstance(node, ast.Import):
        return [f"imports {a.name}" for a in node.names if a.name.startswith("huxley_sdk.logging")]
    module = node.module or ""
    if node.level or module == THE_PATH:
        return []
    found: list[str] = []
    for alias in node.names:
        if module.startswith("huxley_sdk.logging") or (
            module.startswith("huxley_sdk") and alias.name == "logging"
        ):
            found.append(f"imports {module}.{alias.name}")
        elif alias.name in LOGGING_NAMES and module.split(".")[0] in ("huxley_sdk", "huxleyd"):
            found.append(f"imports {alias.name} from {module}")
    return found


def other_logging_paths(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``file:line imports X`` for each logging import that is not huxleyd.logs."""
    return [
        f"{name}:{node.lineno} {problem}"
        for name, tree in parsed(paths, root)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for problem in _logging_imports(node)
    ]


STDLIB_LOG_CALLS = frozenset({"debug", "info", "warning", "error", "exception", "critical", "log"})


def _is_root_logger_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "logging"
        and node.func.attr in STDLIB_LOG_CALLS
    )


def _is_module_logger(statement: ast.stmt) -> bool:
    value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "getLogger"
    )


def stdlib_logging(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``file:line`` for each root-logger call and module-level stdlib logger."""
    found: list[str] = []
    for name, tree in parsed(paths, root):
        found += [
            f"{name}:{node.lineno} logs through the root logger"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _is_root_logger_call(node)
        ]
        found += [
            f"{name}:{statement.lineno} keeps a stdlib module logger"
            for statement in tree.body
            if _is_module_logger(statement)
        ]
    return found


def test_every_huxleyd_module_logs_through_huxleyd_logs() -> None:
    modules = sorted((ROOT / "huxleyd").rglob("*.py"))
    assert len(modules) > 100
    assert other_logging_paths(modules) == []
    assert stdlib_logging(modules) == []


def test_the_sdk_carries_no_journald_contract() -> None:
    assert not (SDK / "logging.py").exists(), "Huxley's SDK has no logging module; nor does ours"
    for path in sorted(SDK.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "HUXLEY_" not in text and "journald" not in text.lower(), path.name


def test_the_scan_catches_each_other_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import huxley_sdk.logging\n"
        "from huxley_sdk.logging import get_logger\n"
        "from huxley_sdk import logging\n"
        "from huxley_sdk import EventLogger\n"
        "from huxleyd.control.watch import FIELDS_ATTR\n"
        "from huxleyd.logs import get_logger as fine\n"
        "import logging as stdlib_is_fine\n"
    )
    assert other_logging_paths([bad], tmp_path) == [
        "bad.py:1 imports huxley_sdk.logging",
        "bad.py:2 imports huxley_sdk.logging.get_logger",
        "bad.py:3 imports huxley_sdk.logging",
        "bad.py:4 imports EventLogger from huxley_sdk",
        "bad.py:5 imports FIELDS_ATTR from huxleyd.control.watch",
    ]


def test_the_scan_catches_stdlib_logging_that_bypasses_events(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "def f() -> None:\n"
        "    logging.warning('card gone %s', 1)\n"
        "    logging.getLogger('websockets').addHandler(logging.NullHandler())\n"
    )
    assert stdlib_logging([bad], tmp_path) == [
        "bad.py:4 logs through the root logger",
        "bad.py:2 keeps a stdlib module logger",
    ]
