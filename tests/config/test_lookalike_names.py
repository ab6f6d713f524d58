"""A name that looks right but is refused shows what the eye cannot.

A Cyrillic ``о`` in ``persоna`` is named (character, code point, Unicode
name), its position given counting from 1, and the known name it stands for
suggested; an all-ASCII name gets no character note.
"""

from __future__ import annotations

from huxleyd.schema.names import line_hint, non_ascii, unknown_name_hint

CYRILLIC_O = "\u043e"
PERSONA = f"pers{CYRILLIC_O}na"
KNOWN = ["persona", "provider", "skills", "audio"]


def test_non_ascii_names_the_character_its_code_point_and_position() -> None:
    assert non_ascii(PERSONA) == "'о' (U+043E CYRILLIC SMALL LETTER O) at position 5"
    assert non_ascii("persona") is None


def test_the_position_counts_from_one() -> None:
    assert non_ascii(f"{CYRILLIC_O}x") is not None
    assert non_ascii(f"{CYRILLIC_O}x").endswith("at position 1")  # type: ignore[union-attr]


def test_unknown_name_hint_names_the_letter_and_suggests_the_intended_key() -> None:
    hint = unknown_name_hint(PERSONA, KNOWN)
    assert hint == (
        "; it holds the non-ASCII character 'о' (U+043E CYRILLIC SMALL LETTER O) "
        "at position 5; did you mean 'persona'?"
    )


def test_a_greek_lookalike_is_folded_too() -> None:
    hint = unknown_name_hint("\u03c1rovider", KNOWN)  # Greek rho for p
    assert "U+03C1 GREEK SMALL LETTER RHO" in hint
    assert hint.endswith("did you mean 'provider'?")


def test_an_ascii_typo_gets_only_the_suggestion() -> None:
    assert unknown_name_hint("skils", KNOWN) == "; did you mean 'skills'?"


def test_an_unrelated_ascii_name_gets_no_hint() -> None:
    assert unknown_name_hint("zzzzzz", KNOWN) == ""
    assert unknown_name_hint("persona", KNOWN) == ""


def test_line_hint_names_the_letter_and_the_word_it_was_meant_to_be() -> None:
    hint = line_hint(f'{PERSONA} = "abbey"')
    assert hint == (
        "; the line holds the non-ASCII character 'о' (U+043E CYRILLIC SMALL LETTER O) "
        "at position 5 (in 'persоna': did you mean 'persona'?)"
    )
    assert line_hint('persona = "abbey"') == ""
