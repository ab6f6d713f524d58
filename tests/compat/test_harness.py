"""The compatibility harness's own logic, offline: how a junit report is read."""

from __future__ import annotations

from pathlib import Path

from tests.compat.huxley import Outcomes, parse_junit

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
