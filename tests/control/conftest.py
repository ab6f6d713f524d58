"""Fixtures: a short socket path (unix socket paths are limited to 107 bytes); the
skills environment the install tests share."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.control.install.envfiles import differences
from tests.control.skillenv_world import World, huxleyctl_runs, make_world, readable_folder


@pytest.fixture
def sock_path(tmp_path: Path) -> Iterator[Path]:
    """A socket path in a fresh directory, short enough for AF_UNIX."""
    candidate = tmp_path / "run" / "control.sock"
    if len(os.fsencode(candidate)) <= 100:
        yield candidate
        return
    short = Path(tempfile.mkdtemp(prefix="hx"))
    try:
        yield short / "run" / "control.sock"
    finally:
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(scope="session")
def skills_world() -> Iterator[World]:
    """One daemon venv and one skills environment for every install test (making the
    skills environment costs seconds); each test leaves it as it found it."""
    with readable_folder() as where:
        yield make_world(where)


@pytest.fixture
def guard(skills_world: World) -> Iterator[World]:
    """After the test: every file of the daemon's venv is the same, and huxleyctl runs."""
    before = skills_world.daemon_files()
    yield skills_world
    assert differences(before, skills_world.daemon_files()) == []
    huxleyctl_runs(skills_world)
