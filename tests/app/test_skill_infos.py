"""``huxleyctl skills``' rows from a real skill host: the distribution each skill was
loaded from, its installed version, and its state."""

from __future__ import annotations

import importlib.metadata as metadata

from huxleyd.app.control import skill_infos
from huxleyd.skillhost.host import SkillHost


def test_rows_name_the_distribution_and_its_version() -> None:
    host = SkillHost.load(["system"])
    (row,) = skill_infos(host.skills, host.sources)
    assert (row.name, row.distribution, row.version) == (
        "system",
        "huxleyd",
        metadata.version("huxleyd"),
    )
    assert (row.state, row.reason) == ("ready", "")
    assert "get_current_time" in row.tools


def test_a_failure_reason_makes_the_row_failed() -> None:
    host = SkillHost.load(["system"])
    (row,) = skill_infos(host.skills, host.sources, {"system": "setup failed: no mixer"})
    assert (row.state, row.reason) == ("failed", "setup failed: no mixer")
