"""``check_plan`` on its own: a plan pip accepted is still checked against the pins.

pip's constraints normally keep such a plan from being made at all; this is
the second line, and it must refuse by itself (a plan from a pip that
ignored a constraint, a pin file that missed a name)."""

from __future__ import annotations

import pytest

from huxleyd.control.install.pins import Installed
from huxleyd.control.install.requests import PlannedDistribution, SkillPackageError, requested_name
from huxleyd.control.install.skillpkgs import Policy, check_plan

PRESENT = {
    "huxley-sdk": Installed("huxley-sdk", "0.1.2+huxleyd", ("numpy>=1.26",)),
    "numpy": Installed("numpy", "2.4.6", ()),
    "helper": Installed("helper", "1.0", ()),
}
BASE = {"huxley-sdk", "numpy"}
"""The skills environment's base: our SDK and what it needs."""
WHEEL = "file:///index/{0}-{1}-py3-none-any.whl"


def planned(
    name: str, version: str, *requires: str, requested: bool = False, is_direct: bool = False
) -> PlannedDistribution:
    url = WHEEL.format(name.replace("-", "_"), version)
    return PlannedDistribution(
        name, version, url, None, requires, is_direct=is_direct, requested=requested
    )


SKILL = "huxley-skill-x"


@pytest.mark.parametrize(
    ("dependency", "pin"),
    [
        (planned("huxley-sdk", "0.1.1"), "huxley-sdk==0.1.2+huxleyd"),
        (planned("numpy", "1.0"), "numpy==2.4.6"),
    ],
)
def test_a_plan_replacing_a_base_distribution_is_refused(
    dependency: PlannedDistribution, pin: str
) -> None:
    requirement = f"{dependency.name}=={dependency.version}"
    skill = planned(SKILL, "1.0", requirement, requested=True)
    with pytest.raises(SkillPackageError) as refused:
        check_plan(SKILL, [skill, dependency], PRESENT, BASE, Policy())
    assert str(refused.value) == (
        f'refused: {SKILL} requires "{requirement}", but the skills environment\'s base pins {pin}'
    )


def test_a_plan_bringing_the_daemon_is_refused() -> None:
    """huxleyd is not in the skills environment, so no pin stops it: the name does."""
    plan = [planned(SKILL, "1.0", "huxleyd>=9", requested=True), planned("huxleyd", "9.0")]
    with pytest.raises(SkillPackageError) as refused:
        check_plan(SKILL, plan, PRESENT, BASE, Policy())
    assert str(refused.value) == (
        f"refused: {SKILL} would install huxleyd 9.0, which is the daemon's own distribution"
    )


def test_a_plan_replacing_another_package_is_refused_naming_the_way() -> None:
    lib = planned("lib", "1.0", "helper>=2")
    plan = [planned(SKILL, "1.0", "lib", requested=True), lib, planned("helper", "2.0")]
    with pytest.raises(SkillPackageError) as refused:
        check_plan(SKILL, plan, PRESENT, BASE, Policy())
    assert str(refused.value) == (
        f'refused: {SKILL} (through lib 1.0) requires "helper>=2", but helper==1.0 is '
        "installed and a skill install only adds distributions (remove what needs it first)"
    )


def test_a_direct_url_needs_allow_url() -> None:
    plan = [planned(SKILL, "1.0", requested=True, is_direct=True)]
    with pytest.raises(SkillPackageError, match="--allow-url installs from a URL or a path"):
        check_plan(SKILL, plan, PRESENT, BASE, Policy())
    assert check_plan(SKILL, plan, PRESENT, BASE, Policy(allow_url=True)) == []


@pytest.mark.parametrize(
    ("request_", "name"),
    [("huxley-skill-x", "huxley-skill-x"), ("huxley-skill-x>=0.2", "huxley-skill-x")],
)
def test_names_pass(request_: str, name: str) -> None:
    assert requested_name(request_, allow_url=False) == name


@pytest.mark.parametrize(
    "request_", ["x @ https://example.com/x.whl", "./x.whl", "/tmp/x.tar.gz", "dir/x"]
)
def test_urls_and_paths_need_allow_url(request_: str) -> None:
    with pytest.raises(SkillPackageError, match="--allow-url installs from one"):
        requested_name(request_, allow_url=False)
