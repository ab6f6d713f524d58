"""The sentence splitter: whole sentences to the TTS, never fragments, never code."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huxleyd.providers.cascade.sentences import SentenceSplitter, clean


def run(deltas: list[str], *, min_chars: int = 0, max_chars: int = 300) -> list[str]:
    splitter = SentenceSplitter(min_chars=min_chars, max_chars=max_chars)
    out: list[str] = []
    for delta in deltas:
        out += splitter.feed(delta)
    return out + splitter.flush()


def test_the_first_sentence_is_released_as_soon_as_it_is_whole() -> None:
    splitter = SentenceSplitter(min_chars=40)
    assert splitter.feed("Sure") == []
    assert splitter.feed(", one moment") == []
    assert splitter.feed(".") == []  # the period may still be "3.5" or "..."
    assert splitter.feed(" Let") == ["Sure, one moment."]
    assert splitter.feed(" me look.") == []
    assert splitter.flush() == ["Let me look."]


def test_later_short_sentences_are_merged_up_to_min_chars() -> None:
    text = "Hi. It is sunny. Warm too. Bring water. And a hat, please. Bye."
    assert run([text], min_chars=20) == [
        "Hi.",
        "It is sunny. Warm too.",
        "Bring water. And a hat, please.",
        "Bye.",
    ]


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("It is 3.5 degrees. Cold.", ["It is 3.5 degrees.", "Cold."]),
        ("Ask Dr. Smith now. Okay.", ["Ask Dr. Smith now.", "Okay."]),
        ("Bring e.g. a coat. Fine.", ["Bring e.g. a coat.", "Fine."]),
        ("Well... maybe later. Sure.", ["Well... maybe later.", "Sure."]),
        ("Hmm… let me think. Yes.", ["Hmm… let me think.", "Yes."]),
        ("By J. R. R. Tolkien. Great.", ["By J. R. R. Tolkien.", "Great."]),
        ("Steps:\n1. Boil water. 2. Add tea.", ["Steps: 1. Boil water.", "2. Add tea."]),
        ("The answer is 42. Really.", ["The answer is 42.", "Really."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("Really?! Wow. Yes!", ["Really?!", "Wow.", "Yes!"]),
        ("At 5 p.m. we go. Bye.", ["At 5 p.m. we go.", "Bye."]),
    ],
)
def test_no_break_inside_numbers_abbreviations_or_ellipses(text: str, chunks: list[str]) -> None:
    assert run([text]) == chunks
    assert run(list(text)) == chunks  # one character at a time


def test_code_blocks_are_never_spoken() -> None:
    deltas = ["Let me check. <co", "de>get_weather(city='Pa", "ris. France')</co", "de> Done."]
    assert run(deltas) == ["Let me check.", "Done."]


def test_an_unclosed_code_block_is_dropped_at_the_end() -> None:
    splitter = SentenceSplitter(min_chars=0)
    out = splitter.feed("One moment. <code>get_weather(city='x'")
    assert out == ["One moment."]
    assert splitter.flush() == []
    assert splitter.dropped_code > 0


def test_fences_and_stars_are_not_read_out() -> None:
    assert run(["Okay. ```python\n<code>f()</code>\n``` **Done** now."]) == ["Okay.", "Done now."]


def test_the_tail_without_a_period_is_flushed() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("no punctuation at all") == []
    assert splitter.flush() == ["no punctuation at all"]


def test_a_run_on_sentence_is_split_at_a_clause_within_max_chars() -> None:
    text = ("word " * 30) + "and then, " + ("more " * 40)
    chunks = run([text], max_chars=200)
    assert chunks[0].endswith("and then,")
    assert all(len(c) <= 200 for c in chunks)
    assert " ".join(chunks).split() == text.split()


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min_chars"):
        SentenceSplitter(min_chars=500, max_chars=300)


# ---------------------------------------------------------------- properties

TOKENS = [
    "Hello.",
    "world",
    "3.5",
    "Dr.",
    "Smith",
    "e.g.",
    "...",
    "…",
    "Why?",
    "Yes!",
    "it",
    "costs",
    "12.75",
    "dollars.",
    "Mr.",
    "J.",
    "the",
    "end.",
    "\n1.",
    "item",
    ",",
    "—",
    '"quoted."',
    "(aside.)",
    "v1.2.3",
    "ok",
    "well,",
    "Zürich",
    "東京.",
    "<code>f(a='x. Y')</code>",
]


def texts() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join)


def split_points(text: str) -> st.SearchStrategy[list[str]]:
    def cut(points: list[int]) -> list[str]:
        edges = [0, *sorted(set(points)), len(text)]
        return [text[a:b] for a, b in itertools.pairwise(edges)]

    return st.lists(st.integers(0, len(text)), max_size=12).map(cut)


def without_code(text: str) -> str:
    return re.sub(r"<code>.*?</code>", " ", text, flags=re.DOTALL)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), text=texts(), min_chars=st.sampled_from([0, 20, 60]))
def test_chunks_do_not_depend_on_how_the_text_was_cut(
    data: st.DataObject, text: str, min_chars: int
) -> None:
    deltas = data.draw(split_points(text))
    assert run(deltas, min_chars=min_chars, max_chars=80) == run(
        [text], min_chars=min_chars, max_chars=80
    )


@settings(max_examples=300, deadline=None)
@given(text=texts(), min_chars=st.sampled_from([0, 20, 60]))
def test_every_word_outside_code_is_spoken_once_in_order(text: str, min_chars: int) -> None:
    chunks = run([text], min_chars=min_chars)
    spoken = " ".join(chunks).split()
    expected = [w for w in clean(without_code(text)).split() if any(c.isalnum() for c in w)]
    assert [w for w in spoken if any(c.isalnum() for c in w)] == expected
    assert not any("<code" in c or "</code" in c or "f(a=" in c for c in chunks)


@settings(max_examples=300, deadline=None)
@given(text=texts())
def test_no_chunk_ends_inside_a_number_abbreviation_or_ellipsis(text: str) -> None:
    chunks = run([text])
    for chunk, following in itertools.pairwise(chunks):
        last = chunk.split()[-1]
        assert not (last[-2:-1].isdigit() and last.endswith(".") and following[:1].isdigit())
        assert last.lower().rstrip(".") not in {"dr", "mr", "e.g"}
        assert not last.endswith(("...", "…"))
        assert not (len(last) == 2 and last[0].isalpha() and last[1] == ".")  # an initial


@settings(max_examples=200, deadline=None)
@given(text=texts())
def test_every_chunk_but_the_last_ends_a_sentence(text: str) -> None:
    chunks = run([text], max_chars=300)
    for chunk in chunks[:-1]:
        assert re.search(r"[.!?]+[\"')\]]*$", chunk), chunk
