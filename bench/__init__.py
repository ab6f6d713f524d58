"""``make bench``: performance measured side by side, printed as one table.

Each ``bench/bench_*.py`` module exposes ``run() -> list[Row]``. A row pairs
a measurement with its baseline or budget, measured in the same run, so the
ratio means something on whatever machine runs it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table. ``ratio`` is value / reference (lower is better)."""

    area: str
    what: str
    value: float
    unit: str
    reference: float | None = None
    reference_label: str = ""
    budget: str = ""

    @property
    def ratio(self) -> float | None:
        if self.reference is None or self.reference == 0:
            return None
        return self.value / self.reference
