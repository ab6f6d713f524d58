"""Fixtures: a skills environment with the probe skill, and the skill user."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from huxleyd.skillhost.skillenv import SkillsEnv
from tests.skillhost.envs import ensure_skill_user, probe_wheel, skills_env_with


@pytest.fixture(scope="session")
def skill_user() -> str | None:
    return ensure_skill_user()


@pytest.fixture(scope="session")
def probe_env(skill_user: str | None) -> SkillsEnv:
    with tempfile.TemporaryDirectory() as tmp:
        wheel = probe_wheel(Path(tmp))
        return skills_env_with([wheel])
