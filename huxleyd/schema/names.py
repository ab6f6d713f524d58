"""Which known name a mistyped one most likely meant, and why they differ.

Layer: pure. A key or a choice that looks right but is refused usually holds
a character that only looks like ASCII (a Cyrillic ``о`` in ``persоna``):
the error must show what the eye cannot, so it names the character, its
Unicode code point and name, and its position (counting from 1), and the
known name it most likely stands for.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

__all__ = ["line_hint", "non_ascii", "unknown_name_hint"]


def non_ascii(text: str) -> str | None:
    """``'о' (U+043E CYRILLIC SMALL LETTER O) at position 5`` for the first
    non-ASCII character of ``text``; None when it is all ASCII."""
    for index, char in enumerate(text):
        if ord(char) > 127:
            name = unicodedata.name(char, "unnamed")
            return f"{char!r} (U+{ord(char):04X} {name}) at position {index + 1}"
    return None


def _skeleton(text: str) -> str:
    """``text`` with each character folded to the ASCII letter it looks like
    (its decomposition's base, or its look-alike from the table below)."""
    out = []
    for char in text:
        if ord(char) < 128:
            out.append(char)
            continue
        base = unicodedata.normalize("NFKD", char)[:1]
        out.append(_LOOKALIKES.get(char, base if base and ord(base) < 128 else "?"))
    return "".join(out)


_LOOKALIKES = {
    # Cyrillic and Greek letters drawn like Latin ones (the usual suspects).
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
    "ј": "j", "ѕ": "s", "һ": "h", "ԁ": "d", "ɡ": "g", "ո": "n", "ս": "u", "ν": "v",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "ο": "o", "α": "a", "ι": "i", "κ": "k", "ρ": "p",
    "τ": "t", "υ": "u", "‐": "-", "‑": "-", "–": "-", "—": "-", "＿": "_",
}  # fmt: skip


def unknown_name_hint(name: str, known: Iterable[str]) -> str:
    """What to add to "unknown key/choice" for ``name``: the non-ASCII character
    it holds and the known name it most likely meant (empty when neither)."""
    choices = [str(k) for k in known]
    parts = []
    odd = non_ascii(name)
    if odd is not None:
        parts.append(f"it holds the non-ASCII character {odd}")
    skeleton = _skeleton(name)
    meant = [c for c in choices if c == skeleton] or difflib.get_close_matches(
        skeleton, choices, n=1, cutoff=0.75
    )
    if meant and meant[0] != name:
        parts.append(f"did you mean {meant[0]!r}?")
    return ("; " + "; ".join(parts)) if parts else ""


def line_hint(line: str) -> str:
    """For a line TOML refused: the non-ASCII character it holds (a bare key may
    only be ASCII, ``persоna = …`` fails to parse) and the word it was likely
    meant to be (empty when the line is all ASCII)."""
    odd = non_ascii(line)
    if odd is None:
        return ""
    index = next(i for i, c in enumerate(line) if ord(c) > 127)
    start = index
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] in "_-"):
        start -= 1
    end = index
    while end < len(line) and (line[end].isalnum() or line[end] in "_-"):
        end += 1
    word = line[start:end]
    meant = _skeleton(word)
    hint = f"; the line holds the non-ASCII character {odd}"
    if meant != word and meant.isascii() and "?" not in meant:
        hint += f" (in {word!r}: did you mean {meant!r}?)"
    return hint
