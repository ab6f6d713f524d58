"""The async test runner's time limit (tests/conftest.py) names the hang."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import _within


def test_a_test_past_its_time_says_where_each_task_waits() -> None:
    async def waits_for_ever() -> None:
        await asyncio.Event().wait()

    async def stuck_test() -> None:
        helper = asyncio.create_task(waits_for_ever(), name="helper")
        try:
            await waits_for_ever()
        finally:
            helper.cancel()

    with pytest.raises(TimeoutError) as caught:
        asyncio.run(_within(stuck_test(), 0.2))
    said = str(caught.value)
    assert "past 0.2 s" in said
    assert "stuck_test (test_test_timeout.py:" in said and "> waits_for_ever" in said
    assert "helper: waits_for_ever (test_test_timeout.py:" in said


def test_a_test_within_its_time_passes_its_result_and_its_failure_through() -> None:
    async def fine() -> None:
        await asyncio.sleep(0)

    async def fails() -> None:
        raise AssertionError("the test's own failure")

    asyncio.run(_within(fine(), 1.0))
    with pytest.raises(AssertionError, match="the test's own failure"):
        asyncio.run(_within(fails(), 1.0))
