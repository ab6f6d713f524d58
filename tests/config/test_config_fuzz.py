"""--check-config and the start agree on generated configurations, without a traceback.

The generator is tests/config/fuzzcases.py (every key of every table with
the wrong type, out of range and at its edges; every path the daemon reads
missing, a directory, a file, a loop, non-UTF-8, BOM, CRLF, empty, huge).
``make test`` runs every SAMPLE_EVERY-th case and the reported ones;
``make config-fuzz`` runs all of them and prints the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.fuzzcases import Case, captured_output, cases, disagreement, verdicts

SAMPLE_EVERY = 20
"""One case in this many runs in ``make test`` (a start is ~0.2 s)."""

ALL = cases()
SAMPLE = [
    c for i, c in enumerate(ALL) if i % SAMPLE_EVERY == 0 or c.category in ("base", "reported")
]


def test_the_generator_makes_enough_cases_of_every_kind() -> None:
    categories = {c.category for c in ALL}
    assert len(ALL) >= 1000
    assert len({c.name for c in ALL}) == len(ALL), "case names are unique"
    for wanted in (
        "[audio] values",
        "persona values",
        "paths: the config file",
        "reported",
        "skill tables",
        "board profiles",
        "sound folders",
        "special paths",
        "non-finite numbers",
        "look-alike letters",
        "sizes",
    ):
        assert wanted in categories
    assert any(c.category.startswith("paths: ") and "symlink loop" in c.name for c in ALL)


@pytest.mark.parametrize("case", SAMPLE, ids=[c.name for c in SAMPLE])
def test_check_config_and_the_start_agree(
    tmp_path: Path, case: Case, capfd: pytest.CaptureFixture[str]
) -> None:
    with captured_output() as output:
        case.apply(tmp_path)
        verdict = verdicts(tmp_path)
    seen = capfd.readouterr()  # what print() wrote: the check's verdict lines
    assert disagreement(verdict, "".join(output) + seen.out + seen.err) is None
