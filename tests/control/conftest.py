"""Fixtures: a short socket path (unix socket paths are limited to 107 bytes)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


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
