"""Run every ``bench/bench_*.py`` and print one table (``make bench``)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

from rich.console import Console
from rich.table import Table

import bench
from bench import Row


def main() -> int:
    only = set(sys.argv[1:])
    rows: list[Row] = []
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda i: i.name):
        if not info.name.startswith("bench_"):
            continue
        if only and info.name.removeprefix("bench_") not in only:
            continue
        module = importlib.import_module(f"bench.{info.name}")
        rows.extend(module.run())
    table = Table(title="huxleyd bench (one run, ratios side by side)")
    for column in ("area", "what", "value", "reference", "ratio", "budget"):
        table.add_column(column)
    for row in rows:
        ref = "" if row.reference is None else f"{row.reference:.4g} {row.reference_label}"
        ratio = "" if row.ratio is None else f"{row.ratio:.3g}"
        table.add_row(row.area, row.what, f"{row.value:.4g} {row.unit}", ref, ratio, row.budget)
    # Piped (make bench > file, CI logs): wide enough that rows stay on one line.
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
