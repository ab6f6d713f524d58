"""The compatibility harness's own logic, offline: how a junit report is read, and
what a suite run that another leg runs beside it, or that tests nothing, gives."""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path

import pytest

from tests.compat.huxley import Outcomes, Venv, in_use, parse_junit, run_suite

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="tests.test_a.TestX" name="test_ok" />
  <testcase classname="tests.test_a.TestX" name="test_bad"><failure message="x"/></testcase>
  <testcase classname="tests.test_a" name="test_broken"><error message="fixture"/></testcase>
  <testcase classname="tests.test_a" name="test_later"><skipped message="net"/></testcase>
  <testcase classname="tests.test_a" name="test_teardown" />
  <testcase classname="tests.test_a" name="test_teardown"><error message="teardown"/></testcase>
</testsuite></testsuites>
"""


def test_outcomes_per_test_id(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(REPORT)
    by_id = parse_junit(report)
    assert by_id == {
        "tests.test_a.TestX::test_ok": "passed",
        "tests.test_a.TestX::test_bad": "failed",
        "tests.test_a::test_broken": "error",
        "tests.test_a::test_later": "skipped",
        # pytest reports a teardown error as a second case of the same id:
        # the test did not pass.
        "tests.test_a::test_teardown": "error",
    }
    assert Outcomes(by_id, 1, "").passed == {"tests.test_a.TestX::test_ok"}


FAKE_PYTEST = """#!{python}
# Stands in for a venv's ``python -m pytest ... --junitxml=REPORT tests``.
import os, pathlib, sys
report = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
if os.environ.get("FAKE_PYTEST_COLLECTS", "1") == "0":
    print("ERROR: file or directory not found: tests")
    sys.exit(4)
pathlib.Path(report).write_text('''{report}''')
# The other test leg now starts the same package's suite, and clears the
# report it is about to write: the old shared path ``record``.
pathlib.Path(os.environ["FAKE_OTHER_LEG_CLEARS"]).unlink(missing_ok=True)
"""


def fake_venv(root: Path) -> Venv:
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text(FAKE_PYTEST.format(python=sys.executable, report=REPORT))
    python.chmod(0o755)
    return Venv(root)


def test_a_run_reads_its_own_report_whatever_another_leg_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both legs of make test run the same package at once: one leg's run must
    not lose its report to the other's (the real SDK once "reported 0/0")."""
    record = tmp_path / "cache" / "reports" / "baseline-system.xml"
    monkeypatch.setenv("FAKE_OTHER_LEG_CLEARS", str(record))
    tree = tmp_path / "tree"
    tree.mkdir()
    outcomes = run_suite(fake_venv(tmp_path / "venv"), tree, record)
    assert outcomes.passed == {"tests.test_a.TestX::test_ok"}
    assert outcomes.problem is None
    assert parse_junit(record) == outcomes.by_id  # the record is this run's copy


def test_a_run_that_tested_nothing_is_a_failure_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PYTEST_COLLECTS", "0")
    record = tmp_path / "cache" / "reports" / "baseline-system.xml"
    tree = tmp_path / "tree"
    tree.mkdir()
    outcomes = run_suite(fake_venv(tmp_path / "venv"), tree, record)
    assert outcomes.by_id == {}
    assert outcomes.problem is not None
    assert "wrote no junit report (exit 4)" in outcomes.problem
    assert "file or directory not found: tests" in outcomes.problem
    assert not record.exists(), "a run that tested nothing is not kept"


def test_an_empty_report_is_a_failure_too() -> None:
    assert (
        Outcomes({}, 0, "no tests ran").problem == "pytest reported no test (exit 0):\nno tests ran"
    )


def test_a_venv_in_use_cannot_be_rebuilt_or_have_its_sdk_reinstalled_under_it(
    tmp_path: Path,
) -> None:
    """Another checkout reinstalls its SDK into the shared venv only under the
    exclusive lock (build_venv's ``locked(venv.lock)``); runs hold it shared."""
    venv = fake_venv(tmp_path / "venvs" / "baseline-0123")

    def exclusive_is_free() -> bool:
        with venv.lock.open("a") as other:  # another process's open file
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(other, fcntl.LOCK_UN)
            return True

    with in_use(venv, "baseline") as held:
        assert held is venv
        assert not exclusive_is_free()
    assert exclusive_is_free()
