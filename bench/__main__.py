"""Run every ``bench/bench_*.py`` and print one table (``make bench``).

A module that raises costs its own rows only: the table says which module
failed and how (one row), the others' rows are printed as measured, and the
exit status is 1. A bench that crashed in its last module once took 25
minutes of measurements down with it.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

import bench
from bench import Row


def run_modules(names: list[str], load: Callable[[str], object]) -> tuple[list[Row], list[str]]:
    """Every module's rows, in order; a module that raises gives one row saying so.
    Returns the rows and the names of the modules that failed."""
    rows: list[Row] = []
    failed: list[str] = []
    for name in names:
        try:
            rows.extend(load(name).run())  # type: ignore[attr-defined]
        except Exception as exc:  # one module's failure is a row, not the end of the table
            traceback.print_exc(file=sys.stderr)
            failed.append(name)
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:120]
            rows.append(Row(name.removeprefix("bench_"), f"NOT MEASURED: {why}", float("nan"), ""))
    return rows, failed


def main() -> int:
    only = set(sys.argv[1:])
    names = [
        info.name
        for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda i: i.name)
        if info.name.startswith("bench_") and (not only or info.name.removeprefix("bench_") in only)
    ]
    rows, failed = run_modules(names, lambda name: importlib.import_module(f"bench.{name}"))
    table = Table(title="huxleyd bench (one run, ratios side by side)")
    for column in ("area", "what", "value", "reference", "ratio", "budget"):
        table.add_column(column)
    for row in rows:
        ref = "" if row.reference is None else f"{row.reference:.4g} {row.reference_label}"
        ratio = "" if row.ratio is None else f"{row.ratio:.3g}"
        table.add_row(row.area, row.what, f"{row.value:.4g} {row.unit}", ref, ratio, row.budget)
    # Piped (make bench > file, CI logs): wide enough that rows stay on one line.
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    if failed:
        print(f"bench: {len(failed)} module(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
