"""The skills environment's base, in parts that need no venv made.

The base is installed from wheels *repacked from the daemon's environment*:
the very files the daemon runs, zipped with a fresh RECORD that the install
check accepts (an editable SDK is packed from its source folder). A folder
without :data:`BASE_MARK` is a creation that did not finish; one that still
holds skills is not removed behind the admin's back. The environment's SDK
must be ours (``+huxleyd``) and the daemon's version.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import sys
import zipfile
from pathlib import Path

import pytest
import structlog

import huxley_sdk
from huxleyd.control.install import skillsbase
from huxleyd.control.install.wheelcheck import read_wheel
from huxleyd.skillhost.sdkcheck import OUR_LABEL, SDK_DISTRIBUTION
from huxleyd.skillhost.skillenv import SkillsEnv


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_repacked_wheel_holds_the_very_files_the_daemon_runs(tmp_path: Path) -> None:
    dist = metadata.distribution("structlog")
    wheel = skillsbase.repack(dist, tmp_path)
    facts = read_wheel(wheel)  # every member is in the fresh RECORD, with its hash
    assert (facts.name, facts.version) == ("structlog", dist.version)
    site = Path(structlog.__file__).parent.parent
    with zipfile.ZipFile(wheel) as zf:
        modules = [n for n in zf.namelist() if n.startswith("structlog/") and n.endswith(".py")]
        assert "structlog/__init__.py" in modules
        for name in modules:
            assert sha(zf.read(name)) == sha((site / name).read_bytes()), name
        assert not [n for n in zf.namelist() if "__pycache__" in n]
        info = f"structlog-{dist.version}.dist-info"
        assert not {f"{info}/INSTALLER", f"{info}/direct_url.json"} & set(zf.namelist())


def test_an_editable_sdk_is_packed_from_the_source_it_imports(tmp_path: Path) -> None:
    dist = metadata.distribution(SDK_DISTRIBUTION)
    wheel = skillsbase.repack(dist, tmp_path)
    facts = read_wheel(wheel)
    assert facts.version.endswith(OUR_LABEL)
    source = Path(huxley_sdk.__file__)
    with zipfile.ZipFile(wheel) as zf:
        assert sha(zf.read("huxley_sdk/__init__.py")) == sha(source.read_bytes())


def env_at(tmp_path: Path) -> SkillsEnv:
    env = SkillsEnv(tmp_path / "skills-env")
    env.python.parent.mkdir(parents=True)
    env.python.symlink_to(sys.executable)
    return env


def test_without_its_mark_the_environment_is_not_ready_and_the_base_is_empty(
    tmp_path: Path,
) -> None:
    env = env_at(tmp_path)
    assert not skillsbase.ready(env)
    assert skillsbase.base_distributions(env) == {}
    skillsbase.records(env).mkdir()
    (skillsbase.records(env) / skillsbase.BASE_MARK).write_text("{not json")
    assert skillsbase.ready(env)
    assert skillsbase.base_distributions(env) == {}
    (skillsbase.records(env) / skillsbase.BASE_MARK).write_text(
        json.dumps({"base": {"huxley-sdk": "0.1+huxleyd"}})
    )
    assert skillsbase.base_distributions(env) == {"huxley-sdk": "0.1+huxleyd"}
    assert skillsbase.ensure(env) == []  # ready: nothing to make, nothing said


def test_an_unfinished_environment_holding_skills_is_not_removed(tmp_path: Path) -> None:
    env = SkillsEnv(tmp_path / "skills-env")
    skillsbase.records(env).mkdir(parents=True)
    (skillsbase.records(env) / "weather.json").write_text("{}")
    with pytest.raises(skillsbase.BaseError, match=r"skills installed in it: weather\)"):
        skillsbase.ensure(env)
    assert (skillsbase.records(env) / "weather.json").is_file()


def fake_sdk(env: SkillsEnv, version: str) -> None:
    info = env.site_packages / f"huxley_sdk-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: huxley-sdk\nVersion: {version}\n")


def test_an_sdk_that_is_not_ours_is_a_problem(tmp_path: Path) -> None:
    env = SkillsEnv(tmp_path / "skills-env")
    assert "has no huxley-sdk, not huxleyd's" in (skillsbase.sdk_problem(env) or "")
    fake_sdk(env, "0.1.2")
    assert skillsbase.sdk_problem(env) == (
        f"the skills environment {env.root} has huxley-sdk 0.1.2, not huxleyd's "
        f"(huxley-sdk *{OUR_LABEL})"
    )


def test_our_sdk_at_another_version_than_the_daemons_is_a_problem(tmp_path: Path) -> None:
    daemon = metadata.version(SDK_DISTRIBUTION)
    other = SkillsEnv(tmp_path / "other")
    fake_sdk(other, f"0.0.1{OUR_LABEL}")
    assert skillsbase.sdk_problem(other) == (
        f"the skills environment {other.root} has huxley-sdk 0.0.1{OUR_LABEL}, the daemon {daemon}"
    )
    same = SkillsEnv(tmp_path / "same")
    fake_sdk(same, daemon)
    assert skillsbase.sdk_problem(same) is None
