"""Huxley's own test suites pass on our huxley_sdk wherever they pass on Huxley's.

The sdists of huxley-sdk 0.1.1 and of Huxley's nine skill packages (pinned
by sha256) are installed into two venvs: *baseline* with the real
huxley-sdk, *ours* with this repository's ``sdk/``. Each package's own test
suite runs in both, and every test id that passes on the baseline must
pass on ours; a test that fails on the real SDK too (a date, the network)
is not held against us. Huxley's SDK test suite runs against ours the same
way.

Needs the package index (CI reaches PyPI) the first time; the cache
(:func:`tests.compat.huxley.cache_dir`) makes reruns offline and fast. When
the index is unreachable and the cache is cold this fails, loudly;
``HUXLEY_COMPAT=skip`` opts out explicitly.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.compat import huxley, surface
from tests.compat.huxley import HUXLEY_SDK, SKILLS, Outcomes, Pin, Venv

PACKAGES = (HUXLEY_SDK, *SKILLS)
FLAVOURS = ("baseline", "ours")


@dataclass
class Compat:
    venvs: dict[str, Venv]
    outcomes: dict[tuple[str, str], Outcomes]
    """(package name, flavour) -> outcomes, for packages installed in that venv."""

    def row(self, pin: Pin) -> str:
        cells = []
        for flavour in FLAVOURS:
            found = self.outcomes.get((pin.name, flavour))
            if found is None:
                cells.append("-")
            else:  # "!" marks a run that tested nothing (a failure, see Outcomes.problem)
                mark = "" if found.problem is None else " !"
                cells.append(f"{len(found.passed)}/{len(found.by_id)}{mark}")
        return f"{pin.short:<11} {cells[0]:>14} {cells[1]:>14}"

    def table(self) -> str:
        header = f"{'package':<11} {'real SDK':>14} {'ours':>14}   (passed/collected)"
        return "\n".join([header, *(self.row(pin) for pin in PACKAGES)])


@pytest.fixture(scope="module")
def compat() -> Iterator[Compat]:
    with ExitStack() as held:
        yield _compat(held)


def _compat(held: ExitStack) -> Compat:
    """Build (or reuse) the venvs, hold them while the suites run, compare."""
    if os.environ.get("HUXLEY_COMPAT") == "skip":
        pytest.skip("HUXLEY_COMPAT=skip: Huxley's packages were not tested against our SDK")
    cache = huxley.cache_dir()
    try:
        sdists = {pin: huxley.fetch_sdist(pin, cache) for pin in PACKAGES}
    except huxley.Unreachable as exc:
        pytest.fail(
            f"{exc}\nThe compatibility suite needs the package index once (then it is cached "
            f"in {cache}); set HUXLEY_COMPAT=skip to run without it.",
            pytrace=False,
        )
    trees = {pin: huxley.unpack(path, cache) for pin, path in sdists.items()}
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            built = {f: pool.submit(huxley.build_venv, f, sdists, cache) for f in FLAVOURS}
            venvs = {flavour: future.result() for flavour, future in built.items()}
        venvs = {
            flavour: held.enter_context(huxley.in_use(v, flavour)) for flavour, v in venvs.items()
        }
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"building the venvs failed: {huxley.explain(exc)}", pytrace=False)
    jobs = [
        (pin, flavour)
        for pin in PACKAGES
        for flavour in FLAVOURS
        if pin.name not in venvs[flavour].not_installed
    ]
    reports = cache / "reports" / huxley.interpreter_tag()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {
            (pin.name, flavour): pool.submit(
                huxley.run_suite,
                venvs[flavour],
                trees[pin],
                reports / f"{flavour}-{pin.short}.xml",
            )
            for pin, flavour in jobs
        }
        outcomes = {key: future.result() for key, future in futures.items()}
    result = Compat(venvs, outcomes)
    huxley.replace_atomically(result.table() + "\n", reports / "last-table.txt")
    return result


def test_installing_huxley_skills_leaves_our_sdk_in_place(compat: Compat) -> None:
    ours = tomllib.loads((huxley.SDK_DIR / "pyproject.toml").read_text())["project"]["version"]
    venv = compat.venvs["ours"]
    assert huxley.installed_version(venv, "huxley-sdk") == ours
    assert huxley.installed_version(compat.venvs["baseline"], "huxley-sdk") == HUXLEY_SDK.version


def test_our_sdk_has_huxleys_names_signatures_and_defaults(compat: Compat) -> None:
    script = str(Path(surface.__file__))
    found = {
        flavour: json.loads(huxley.run_python(compat.venvs[flavour], script))
        for flavour in FLAVOURS
    }
    assert found["baseline"]["huxley_sdk.types"], "nothing read from Huxley's SDK"
    problems = surface.differences(found["baseline"], found["ours"])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("pin", PACKAGES, ids=[pin.short for pin in PACKAGES])
def test_what_passes_on_huxleys_sdk_passes_on_ours(compat: Compat, pin: Pin) -> None:
    reason = compat.venvs["baseline"].not_installed.get(pin.name)
    if reason is not None:
        pytest.skip(f"{pin.name} does not install here, even beside the real SDK: {reason}")
    assert pin.name not in compat.venvs["ours"].not_installed, (
        f"{pin.name} installs beside the real SDK but not beside ours: "
        f"{compat.venvs['ours'].not_installed[pin.name]}"
    )
    baseline = compat.outcomes[(pin.name, "baseline")]
    ours = compat.outcomes[(pin.name, "ours")]
    # A run that tested nothing would compare nothing: that is a failure, with pytest's reason.
    for flavour, outcomes in (("the real SDK", baseline), ("ours", ours)):
        assert outcomes.problem is None, f"{pin.name} on {flavour}: {outcomes.problem}"
    assert baseline.passed, f"no test of {pin.name} passed on the real SDK:\n{baseline.output_tail}"
    lost = sorted(baseline.passed - ours.passed)
    assert not lost, (
        f"{pin.name}: {len(lost)} test(s) pass on huxley-sdk {HUXLEY_SDK.version} but not on ours "
        f"({compat.row(pin).split(maxsplit=1)[1]}):\n  "
        + "\n  ".join(f"{test} -> {ours.by_id.get(test, 'not collected')}" for test in lost[:25])
        + (f"\n  … and {len(lost) - 25} more" if len(lost) > 25 else "")
        + f"\n--- our run's output ---\n{ours.output_tail}"
    )


def test_compatibility_table(compat: Compat, capsys: pytest.CaptureFixture[str]) -> None:
    """The table for the record (``-s`` shows it; it is also in the cache dir)."""
    with capsys.disabled():
        print("\n" + compat.table())
    assert len(compat.outcomes) >= 2 * (len(PACKAGES) - len(compat.venvs["baseline"].not_installed))
