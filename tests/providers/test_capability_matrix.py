"""docs/providers.md carries the capability matrix exactly as the code renders it."""

from __future__ import annotations

from pathlib import Path

from huxleyd.providers.base import InterruptAcceptance
from huxleyd.providers.factory import (
    MATRIX_END,
    MATRIX_START,
    capability_matrix_markdown,
    with_matrix,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
REGENERATE = (
    'python -c "from pathlib import Path; from huxleyd.providers.factory import with_matrix; '
    "p = Path('docs/providers.md'); p.write_text(with_matrix(p.read_text()))\""
)


def test_the_committed_page_matches_the_code() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page == with_matrix(page), f"docs/providers.md is stale; regenerate: {REGENERATE}"


def test_the_matrix_is_read_from_the_cores() -> None:
    table = capability_matrix_markdown()
    rows = {
        line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| `")
    }
    # columns: openai, xai, gemini, cascade
    assert rows["`truncate`"].endswith("| yes | no | no | yes |")
    assert rows["`input_rate_hz`"].endswith("| 24000 | 24000 | 16000 | 24000 |")
    assert InterruptAcceptance.LOCAL_CUT_ASYNC_CONFIRMATION.value in rows["`interrupt_acceptance`"]
    assert "- `response_cancel` (xai, gemini): local cut" in table


def test_a_stale_block_is_replaced_and_a_page_without_one_is_an_error() -> None:
    stale = f"intro\n{MATRIX_START}\n| old |\n{MATRIX_END}\noutro\n"
    fresh = with_matrix(stale)
    assert fresh.startswith("intro\n") and fresh.endswith(f"{MATRIX_END}\noutro\n")
    assert "| old |" not in fresh and capability_matrix_markdown() in fresh
    try:
        with_matrix("no markers")
    except ValueError as exc:
        assert "capability-matrix" in str(exc)
    else:
        raise AssertionError("a page without markers must be refused")
