"""A flood of server events, each of a new unknown type: a bounded log, a count.

Every dialect's core logs a new unknown event type once; the memory of what
was logged is bounded, and what falls past it is counted and shown by
``huxleyctl status``.
"""

from __future__ import annotations

import json
import logging

import pytest

from huxleyd.control.handler import StatusReport
from huxleyd.control.render import LINK_CLEAN, provider_link_in_words
from huxleyd.providers.base import Dialect
from huxleyd.providers.core import ONCE_TAGS_MAX, SansIOCore
from huxleyd.providers.factory import protocol_for

FLOOD = 5_000


def unknown_frame(dialect: Dialect, n: int) -> str:
    if dialect == "gemini":
        return json.dumps({f"novelThing{n}": {}})
    return json.dumps({"type": f"novel.event_{n}", "event_id": f"ev_{n}"})


@pytest.mark.parametrize("dialect", ["openai", "xai", "gemini"])
def test_a_flood_of_new_unknown_event_types_logs_a_few_dozen_lines_and_counts_the_rest(
    dialect: Dialect, caplog: pytest.LogCaptureFixture
) -> None:
    core = protocol_for(dialect)
    assert isinstance(core, SansIOCore)
    with caplog.at_level(logging.INFO, logger="huxleyd"):
        for n in range(FLOOD):
            core.receive(unknown_frame(dialect, n))
        for n in range(FLOOD):  # the same types again: nothing new to say
            core.receive(unknown_frame(dialect, n))
    unknown = [r for r in caplog.records if "unknown" in r.getMessage()]
    assert len(unknown) == ONCE_TAGS_MAX  # was FLOOD lines (39,100 in 15 s in the field)
    assert "only counted" in unknown[-1].getMessage()  # the journal says where counting starts
    # Every frame past the bound is counted (a type seen again past the bound
    # cannot be told from a new one without the memory we refuse to grow).
    assert core.unlogged_notes == 2 * (FLOOD - ONCE_TAGS_MAX)
    assert core.events_received() == []  # skipped, not reported as errors


def test_status_shows_the_counted_events_and_the_stalls() -> None:
    base = StatusReport(
        state="idle",
        provider_state="connected",
        media=None,
        volume=50,
        uptime_s=1.0,
        persona="default",
        provider_kind="openai",
        is_simulator=False,
    )
    assert provider_link_in_words(base) == LINK_CLEAN
    seen = StatusReport.from_dict(
        {**base.to_dict(), "provider_stalls": 2, "provider_unlogged_notes": 4968}
    )
    words = provider_link_in_words(seen)
    assert "2 stalls" in words and "4968 unknown server events counted" in words
