"""Sentence-coherent chunks for speech from a stream of LLM text deltas.

Layer: pure logic. :class:`SentenceSplitter` takes the deltas as they come
(:meth:`~SentenceSplitter.feed`) and hands out text a TTS can read without
sounding chopped:

- the first chunk is the first whole sentence, as soon as it is complete
  (the listener hears something early, and never half a sentence);
- later chunks are whole sentences too, short ones merged until a chunk has
  ``min_chars`` (fewer, better-phrased TTS requests);
- a sentence ends at ``.``, ``!``, ``?`` or ``…`` (with closing quotes or
  brackets) followed by whitespace — never inside a number (``3.5``), after
  a known abbreviation (``Dr.``, ``e.g.``), an initial (``J.``), a list
  number at the start of a line (``1.``), or inside/after an ellipsis
  (``...``);
- a run-on sentence longer than ``max_chars`` is split at its last clause
  break (``,;:—``) or space within ``max_chars``: the only case where a
  chunk is not a whole sentence, so a listener is not left in silence;
- :meth:`~SentenceSplitter.flush` hands out the tail at the end;
- ``<code>…</code>`` blocks (tool calls, tags in any case) and markdown
  fences are never spoken; a ``</code>`` inside a string argument does not
  end the block (as :func:`~huxleyd.providers.cascade.codeprompt.parse_reply`
  reads it); an unclosed block is dropped at the end.

The chunks do not depend on how the text was cut into deltas: a boundary is
decided only once the whitespace after it has arrived.
"""

from __future__ import annotations

import re

OPEN_TAG = "<code>"
CLOSE_TAG = "</code>"
_OPEN = re.compile(re.escape(OPEN_TAG), re.IGNORECASE)
_CLOSE = re.compile(re.escape(CLOSE_TAG), re.IGNORECASE)


def open_quote(code: str) -> str | None:
    """The string quote still open at the end of Python source ``code`` (``'``,
    ``"``, or a triple quote), or None: a ``</code>`` met there is part of a
    string argument, not the end of the block."""
    quote: str | None = None
    i = 0
    while i < len(code):
        if quote is not None:
            if code[i] == "\\":
                i += 2
                continue
            if code.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif code[i] in "'\"":
            triple = code[i : i + 3]
            quote = triple if triple in ("'''", '"""') else code[i]
            i += len(quote)
            continue
        i += 1
    return quote


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ABBREVIATIONS = _words(
    """mr mrs ms dr prof sr jr st mt vs etc approx dept est fig no nos vol
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
    inc ltd co corp ave blvd rd gen col lt sgt capt rev hon min max ca cf al"""
)
"""Words that end with a period without ending the sentence (compared lower-cased)."""

_TERMINATOR = re.compile(r"(?:\.{2,}|…|[.!?]+)[\"'”’)\]»]*(?=\s)")
_CLAUSE = re.compile(r"[,;:—–](?=\s)")
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*")


def _word_before(text: str, end: int) -> str:
    """The run of non-space characters ending at ``end`` (excluded)."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end]


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    marks = match.group()
    if marks.startswith("..") or marks.startswith("…"):
        return False  # an ellipsis trails off; the sentence usually goes on
    if not marks.startswith("."):
        return True
    word = _word_before(text, match.start()).lstrip("\"'“‘([«")
    if not word:
        return True
    bare = word.lower()
    if bare in ABBREVIATIONS:
        return False
    if "." in word:  # e.g., i.e., p.m., U.S.
        return False
    if len(word) == 1 and word.isalpha():  # an initial: J. R. R. Tolkien
        return False
    if word.isdigit() and len(word) <= 2:
        line_start = text.rfind("\n", 0, match.start()) + 1
        if not text[line_start : match.start() - len(word)].strip():
            return False  # "1. First item" at the start of a line
    return True


def clean(text: str) -> str:
    """Text as a TTS should read it: fences and emphasis stars gone, spaces collapsed."""
    text = _FENCE.sub(" ", text).replace("**", "").replace("`", "")
    return " ".join(text.split())


def _speakable(text: str) -> bool:
    return any(c.isalnum() for c in text)


class SentenceSplitter:
    """Turn LLM deltas into speakable chunks. One instance per response.

    ``feed(delta)`` returns the chunks that became ready (often none);
    ``flush()`` returns the rest at the end of the stream. Chunks are cleaned
    (:func:`clean`) and never empty; chunks with nothing to pronounce (a
    lone "—") are dropped.
    """

    def __init__(self, *, min_chars: int = 40, max_chars: int = 300) -> None:
        if not 0 <= min_chars <= max_chars or max_chars < 20:
            raise ValueError(
                f"need 0 <= min_chars <= max_chars and max_chars >= 20, got "
                f"{min_chars}, {max_chars}"
            )
        self._min_chars = min_chars
        self._max_chars = max_chars
        self._raw = ""
        """Text that may still hold a partial tag."""
        self._in_code = False
        self._code = ""
        """The open block's text so far (to tell a closing tag from one in a string)."""
        self._text = ""
        """Speakable text whose sentence boundaries are not decided yet."""
        self._held = ""
        """Whole sentences waiting to reach ``min_chars`` (after the first chunk)."""
        self._emitted = 0
        self.dropped_code = 0
        """Characters of ``<code>`` blocks removed (tags included)."""

    def feed(self, delta: str) -> list[str]:
        """Take one delta; return the chunks now ready to speak."""
        self._raw += delta
        self._strip_code()
        return self._take_sentences()

    def flush(self) -> list[str]:
        """The end of the stream: everything left that can be spoken."""
        if self._in_code:  # an unclosed block: never spoken
            self.dropped_code += len(self._raw)
        else:
            self._text += self._raw
        self._raw = ""
        out = self._take_sentences()
        tail = self._join(self._held, self._text)
        self._held = self._text = ""
        return out + self._emit(tail)

    # ------------------------------------------------------------ internals

    def _strip_code(self) -> None:
        while True:
            if self._in_code:
                end = self._close_at()
                if end < 0:
                    keep = _partial_suffix(self._raw, CLOSE_TAG)
                    self.dropped_code += len(self._raw) - keep
                    self._code += self._raw[: len(self._raw) - keep]
                    self._raw = self._raw[len(self._raw) - keep :]
                    return
                self.dropped_code += end + len(CLOSE_TAG)
                self._raw = self._raw[end + len(CLOSE_TAG) :]
                self._in_code = False
                self._code = ""
                self._text += " "  # the block separated words
                continue
            found = _OPEN.search(self._raw)
            start = found.start() if found else -1
            if start < 0:
                keep = _partial_suffix(self._raw, OPEN_TAG)
                self._text += self._raw[: len(self._raw) - keep]
                self._raw = self._raw[len(self._raw) - keep :]
                return
            self._text += self._raw[:start]
            self.dropped_code += len(OPEN_TAG)
            self._raw = self._raw[start + len(OPEN_TAG) :]
            self._in_code = True

    def _close_at(self) -> int:
        """Where in ``_raw`` the open block ends (its ``</code>``, not one inside a
        string argument); -1 while it has not ended yet."""
        pos = 0
        while (found := _CLOSE.search(self._raw, pos)) is not None:
            if open_quote(self._code + self._raw[: found.start()]) is None:
                return found.start()
            pos = found.end()
        return -1

    def _next_boundary(self) -> int | None:
        """End offset of the first sentence in ``_text``, or of a forced split."""
        window = self._text[: self._max_chars + 1]
        for match in _TERMINATOR.finditer(window):
            if match.end() <= self._max_chars and _is_boundary(self._text, match):
                return match.end()
        if len(self._text) <= self._max_chars:
            return None
        cut = self._text[: self._max_chars]
        clauses = [m.end() for m in _CLAUSE.finditer(cut)]
        if clauses:
            return clauses[-1]
        space = cut.rfind(" ")
        return space if space > 0 else self._max_chars

    def _take_sentences(self) -> list[str]:
        out: list[str] = []
        while (end := self._next_boundary()) is not None:
            sentence, self._text = self._text[:end], self._text[end:]
            if self._emitted == 0 and not self._held:
                out += self._emit(sentence)
                continue
            self._held = self._join(self._held, sentence)
            if len(clean(self._held)) >= self._min_chars:
                out += self._emit(self._held)
                self._held = ""
        return out

    @staticmethod
    def _join(a: str, b: str) -> str:
        return f"{a} {b}" if a and b else a or b

    def _emit(self, text: str) -> list[str]:
        chunk = clean(text)
        if not _speakable(chunk):
            return []
        self._emitted += 1
        return [chunk]


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:].lower()):
            return size
    return 0
