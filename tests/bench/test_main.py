"""``make bench``'s runner: one module that raises costs its own rows only."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from bench import Row
from bench.__main__ import run_modules


def test_a_module_that_raises_is_a_row_and_the_others_still_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> list[Row]:
        raise AssertionError("timed out waiting for: the reply's first delta")

    modules = {
        "bench_audio": SimpleNamespace(run=lambda: [Row("audio", "mix", 1.0, "ms")]),
        "bench_turns": SimpleNamespace(run=broken),
        "bench_zz": SimpleNamespace(run=lambda: [Row("zz", "last", 2.0, "ms")]),
    }
    rows, failed = run_modules(list(modules), modules.__getitem__)
    assert failed == ["bench_turns"]
    assert [r.what for r in rows] == [
        "mix",
        "NOT MEASURED: AssertionError: timed out waiting for: the reply's first delta",
        "last",
    ]
    assert math.isnan(rows[1].value)  # never a made-up figure
    assert "Traceback" in capsys.readouterr().err  # the cause, where the operator sees it
