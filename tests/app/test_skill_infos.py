"""``huxleyctl skills``' rows from a real skill host: the distribution each skill was
loaded from, its installed version, and its state."""

from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path

from huxleyd.app.control import installed_version, skill_infos
from huxleyd.skillhost.host import SkillHost
from huxleyd.skillhost.skillenv import SkillsEnv


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


def test_a_third_party_skills_version_is_read_from_the_skills_environment(
    tmp_path: Path,
) -> None:
    """A third-party skill is installed in the skills environment, never in the
    daemon's: its version is read there (it was listed as '?')."""
    env = SkillsEnv(tmp_path / "env")
    info = env.site_packages / "huxley_skill_probe-0.1.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: huxley-skill-probe\nVersion: 0.1.3\n"
    )
    assert installed_version("huxley-skill-probe", env) == "0.1.3"
    assert installed_version("huxley-skill-nowhere", env) == ""
    assert installed_version("huxleyd", env) == metadata.version("huxleyd")
    assert installed_version("", env) == ""
