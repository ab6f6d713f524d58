"""Docs that mirror the code are written from it, never by hand.

A block of a document between ``<!-- generated: NAME ... -->`` and
``<!-- end: NAME -->`` is made by the function :data:`BLOCKS` names for it,
from the code itself: the layer table from the import graph, the shutdown
order and the runtime tasks from what ``tests/app/test_composition.py``
saw a running daemon do. ``tests/test_doc_blocks.py`` fails when a block
differs from what the code gives now; then run

    .venv/bin/python -m tests.doc_blocks --write

and read the diff. The threads table keeps its prose, so it is checked, not
written: :func:`code_thread_names` against :func:`doc_thread_names`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tests.test_import_cycles import ROOT, import_graph

ARCHITECTURE = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"


def begin_marker(name: str) -> str:
    return f"<!-- generated: {name} (python -m tests.doc_blocks --write) -->"


def end_marker(name: str) -> str:
    return f"<!-- end: {name} -->"


def read_block(text: str, name: str) -> str:
    """What stands between the block's markers (raises when there is no block)."""
    begin, end = begin_marker(name), end_marker(name)
    if begin not in text or end not in text:
        raise LookupError(f"no generated block {name!r}: add {begin} ... {end}")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def write_block(text: str, name: str, content: str) -> str:
    begin, end = begin_marker(name), end_marker(name)
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{content}\n{end}{tail}"


# ---------------------------------------------------------------- layers


def levels(parts: Mapping[str, set[str]]) -> dict[str, int]:
    """Each part's floor: 0 for a part that imports none, else one above the
    highest it imports (the graph must be acyclic: the walls test that)."""
    found: dict[str, int] = {}

    def floor(part: str, seen: frozenset[str]) -> int:
        if part not in found:
            if part in seen:
                raise ValueError(f"a circle through {part}")
            deps = parts.get(part, set())
            found[part] = 1 + max((floor(d, seen | {part}) for d in deps), default=-1)
        return found[part]

    for part in parts:
        floor(part, frozenset())
    return found


def as_path(part: str, root: Path = ROOT) -> str:
    """``huxleyd.audio`` → ``huxleyd/audio``; ``huxleyd.logs`` → ``huxleyd/logs.py``."""
    path = part.replace(".", "/")
    return path if (root / path).is_dir() else f"{path}.py"


def layer_table(parts: Mapping[str, set[str]], root: Path = ROOT) -> str:
    """The layer table: floor, part, and every part of ``huxleyd`` it imports
    (``huxleyd`` itself, whose init imports nothing, left out)."""
    floors = levels(parts)
    rows = ["| floor | part | imports (of `huxleyd`) |", "|---|---|---|"]
    for part in sorted(floors, key=lambda p: (floors[p], p)):
        if "." not in part:
            continue
        deps = ", ".join(f"`{as_path(d, root)}`" for d in sorted(parts.get(part, ())))
        rows.append(f"| {floors[part]} | `{as_path(part, root)}` | {deps or '—'} |")
    return "\n".join(rows)


def current_layer_table() -> str:
    from tests.test_layer_walls import package_graph

    return layer_table(package_graph(import_graph()))


# ---------------------------------------------------------------- composition


def arrow_list(names: Iterable[str]) -> str:
    return " → ".join(f"`{n}`" for n in names)


def shutdown_order() -> str:
    from tests.app.test_composition import CLOSE_ORDER

    return arrow_list(CLOSE_ORDER)


def runtime_tasks() -> str:
    from tests.app.test_composition import RUNTIME_TASKS

    return ", ".join(f"`{n}`" for n in sorted(RUNTIME_TASKS))


def c_extensions(setup_py: Path = ROOT / "setup.py") -> str:
    """The README's build notes: each ``Extension`` of setup.py, its sources and libraries."""
    import ast

    lines = []
    for node in ast.walk(ast.parse(setup_py.read_text())):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Extension"):
            continue
        name = ast.literal_eval(node.args[0])
        keywords = {k.arg: k.value for k in node.keywords}
        sources = [Path(s).name for s in ast.literal_eval(keywords["sources"])]
        libraries = ast.literal_eval(keywords["libraries"]) if "libraries" in keywords else []
        optional = "optional" in keywords and ast.literal_eval(keywords["optional"]) is True
        links = (
            f", linked with {', '.join(f'`lib{lib}`' for lib in libraries)}" if libraries else ""
        )
        lines.append(
            f"- `{name}` from {', '.join(f'`{s}`' for s in sources)}{links}"
            + (" (optional: the install goes on without it)" if optional else "")
        )
    return "\n".join(lines)


def names_in(block: str) -> list[str]:
    """The backticked names of a block, in order."""
    return re.findall(r"`([^`]+)`", block)


BLOCKS: dict[tuple[Path, str], Callable[[], str]] = {
    (ARCHITECTURE, "layers"): current_layer_table,
    (ARCHITECTURE, "shutdown-order"): shutdown_order,
    (ARCHITECTURE, "runtime-tasks"): runtime_tasks,
    (README, "c-extensions"): c_extensions,
}


# ---------------------------------------------------------------- threads

_PY_THREAD = re.compile(r"""(?:name|thread_name_prefix)\s*=\s*["'](huxleyd-[a-z0-9-]+)["']""")
_C_THREAD = re.compile(r"""pthread_setname_np\([^,]+,\s*"(huxleyd-[a-z0-9-]+)"\)""")


def code_thread_names(package: Path = ROOT / "huxleyd") -> set[str]:
    """Every thread of ours the code names: Python's ``threading.Thread(name=...)``
    and executors' ``thread_name_prefix``, C's ``pthread_setname_np``."""
    found: set[str] = set()
    for path in package.rglob("*.py"):
        found.update(m for m in _PY_THREAD.findall(path.read_text(encoding="utf-8")))
    for path in [*package.rglob("*.c"), *package.rglob("*.h")]:
        found.update(_C_THREAD.findall(path.read_text(encoding="utf-8")))
    return found


def doc_thread_names(text: str) -> set[str]:
    """The ``huxleyd-*`` threads the first column of the Threads table names."""
    section = text.split("\n## Threads\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            first = line.split("|")[1]
            names.update(re.findall(r"`(huxleyd-[a-z0-9-]+)`", first))
    return names


# ---------------------------------------------------------------- command


def stale_blocks() -> list[str]:
    """``file: block`` for each generated block that differs from the code now."""
    stale = []
    for (path, name), make in BLOCKS.items():
        if read_block(path.read_text(encoding="utf-8"), name) != make():
            stale.append(f"{path.relative_to(ROOT)}: {name}")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the stale blocks")
    args = parser.parse_args(argv)
    stale = stale_blocks()
    if args.write:
        for (path, name), make in BLOCKS.items():
            text = path.read_text(encoding="utf-8")
            path.write_text(write_block(text, name, make()), encoding="utf-8")
    for line in stale:
        print(("rewrote " if args.write else "stale: ") + line)
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
