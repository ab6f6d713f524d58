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


def misnamed_protocols(files: list[Path], base: Path) -> list[str]:
    """``file:Name`` for each class named ``…Protocol`` that is not a ``typing.Protocol``.

    "Protocol" once named both the ports (``typing.Protocol``) and the
    providers' sans-I/O wire cores; the cores are ``…Core`` now."""
    found: list[str] = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Protocol"):
                bases = {ast.unparse(b) for b in node.bases}
                if not bases & {"Protocol", "typing.Protocol"}:
                    found.append(f"{path.relative_to(base).as_posix()}:{node.name}")
    return sorted(found)


def test_only_typing_protocols_are_named_protocol() -> None:
    assert misnamed_protocols(sorted(PACKAGE.rglob("*.py")), PACKAGE) == []


def test_the_scan_finds_a_core_named_protocol(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text(
        "from typing import Protocol\n"
        "class SansIOCore: ...\n"
        "class OpenAIRealtimeProtocol(SansIOCore): ...\n"
        "class ClassifiesProtocol(Protocol): ...\n"
    )
    assert misnamed_protocols([tmp_path / "core.py"], tmp_path) == [
        "core.py:OpenAIRealtimeProtocol"
    ]
