"""Real-time tests judge real time only where the machine kept it.

A test on the clocked card (``tests/fakes/clockcard.py``) measures in time, and
a loaded machine may not keep time: the card's own log (an xrun) or its
recording (a gap in a tone the engine kept fed) says when it did not. Such a
run proves nothing either way, so the test retries it, and skips with the
reason when no run was kept. It never passes on a run it could not judge.

A skip is not free: every real-time test reports here how it ended (judged at
the first try, judged after retries, skipped for load), the session prints the
counts, and a session where more than :data:`LOAD_SKIP_SHARE` of the real-time
tests skipped for load fails: a suite that always skips would be green and
prove nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

import pytest

LOAD_SKIP_SHARE = 1 / 3
"""More real-time tests than this share skipped for load: the session fails."""


@dataclass(slots=True)
class Ledger:
    """How each real-time test of this session ended."""

    first: list[str] = field(default_factory=list)
    retried: dict[str, int] = field(default_factory=dict)
    """test id → the try that was judged (2, 3…)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """test id → why no try was judged."""

    def summary(self) -> str:
        return (
            f"real-time tests: {len(self.first)} judged at the first try, "
            f"{len(self.retried)} after a retry, {len(self.skipped)} skipped for load"
        )

    def verdict(self) -> str | None:
        """Why the session must fail, or None."""
        total = len(self.first) + len(self.retried) + len(self.skipped)
        if total == 0 or len(self.skipped) <= LOAD_SKIP_SHARE * total:
            return None
        reasons = "; ".join(f"{name}: {why}" for name, why in self.skipped.items())
        return (
            f"{len(self.skipped)} of {total} real-time tests skipped for load "
            f"(more than {LOAD_SKIP_SHARE:.0%}): this run proves nothing about real time. "
            f"{reasons}"
        )


LEDGER_KEY = pytest.StashKey[Ledger]()
T = TypeVar("T")


@dataclass(slots=True)
class RealTime:
    """One real-time test's account (the ``realtime`` fixture)."""

    ledger: Ledger
    name: str

    def judged(self, tries: int) -> None:
        """The run of try ``tries`` (1 = the first) was kept in time: it is judged."""
        if tries <= 1:
            self.ledger.first.append(self.name)
        else:
            self.ledger.retried[self.name] = tries

    def skip_for_load(self, reason: str) -> NoReturn:
        self.ledger.skipped[self.name] = reason
        pytest.skip(f"the machine kept no time in any try: {reason}")

    def kept(self, attempt: Callable[[], tuple[T, str | None]], *, tries: int = 3) -> T:
        """Run ``attempt`` until one says it was kept in time (its second value None,
        else why not) and return its result; skip for load after ``tries``."""
        why = ""
        for index in range(1, tries + 1):
            result, disturbed = attempt()
            if disturbed is None:
                self.judged(index)
                return result
            why = disturbed
        self.skip_for_load(why)
