"""Fixtures shared by the audio tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.clockcard import ClockCard, ClockCardUnavailable, build_plugin, write_asoundrc


@pytest.fixture
def card(tmp_path: Path) -> ClockCard:
    """The clocked fake card (built once), as the default ALSA device of this test."""
    try:
        build_plugin()
    except ClockCardUnavailable as exc:
        pytest.skip(str(exc))
    return write_asoundrc(tmp_path)
