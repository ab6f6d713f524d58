"""The tables of docs/architecture.md that mirror code agree with the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_blocks import (
    ARCHITECTURE,
    BLOCKS,
    code_thread_names,
    doc_thread_names,
    layer_table,
    levels,
    read_block,
    stale_blocks,
    write_block,
)


def test_every_generated_block_says_what_the_code_says() -> None:
    assert stale_blocks() == [], "run: .venv/bin/python -m tests.doc_blocks --write"


@pytest.mark.parametrize(("page", "name"), sorted(BLOCKS), ids=lambda x: getattr(x, "name", x))
def test_a_block_edited_by_hand_is_seen(page: Path, name: str) -> None:
    text = page.read_text(encoding="utf-8")
    edited = write_block(text, name, read_block(text, name) + "\n| 9 | `made-up` | — |")
    assert read_block(edited, name) != BLOCKS[(page, name)]()


def test_the_layer_table_puts_each_part_above_what_it_imports(tmp_path: Path) -> None:
    (tmp_path / "a" / "app").mkdir(parents=True)
    parts = {"a.app": {"a.turns", "a.pcm"}, "a.turns": {"a.pcm"}, "a.pcm": set(), "a": set()}
    assert levels(parts) == {"a": 0, "a.pcm": 0, "a.turns": 1, "a.app": 2}
    table = layer_table(parts, root=tmp_path).splitlines()
    assert [row.split("|")[2].strip() for row in table[2:]] == [
        "`a/pcm.py`",
        "`a/turns.py`",
        "`a/app`",
    ]
    with pytest.raises(ValueError, match="circle"):
        levels({"a": {"b"}, "b": {"a"}})


def test_the_threads_table_names_every_thread_the_code_names() -> None:
    in_code = code_thread_names()
    assert {"huxleyd-audio", "huxleyd-feeder", "huxleyd-db"} <= in_code  # the scan sees C too
    in_doc = doc_thread_names(ARCHITECTURE.read_text(encoding="utf-8"))
    assert in_doc == in_code, (
        f"only in the code: {in_code - in_doc}; only in the doc: {in_doc - in_code}"
    )
