"""A skill's searchable list of its own items (books, stations, contacts).

A skill builds one with ``ctx.catalog()`` in ``setup``, ``upsert``s its
items (string ``fields`` to search and show, an opaque ``payload`` to act
on), resolves what the user said with ``search``, and lists the items in
the model's instructions with ``as_prompt_lines`` from ``prompt_context``.

Matching is the same as Huxley's: both sides are case- and accent-folded
("García" finds "garcia"), each field is scored with difflib's
``SequenceMatcher`` ratio, and an item scores its best field. The methods
that may one day touch a database are async.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any


def _fold(text: str) -> str:
    """Lower-case and strip accents (``"Márquez"`` -> ``"marquez"``); keeps other characters."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _score(folded_query: str, folded_text: str) -> float:
    if not folded_query or not folded_text:
        return 0.0
    return SequenceMatcher(None, folded_query, folded_text).ratio()


@dataclass(frozen=True, slots=True)
class Hit:
    """One catalog item as a search (or ``get``, or iteration) returns it.

    ``score`` is in 0..1, higher is closer (1.0 outside a search);
    ``fields`` and ``payload`` are what the skill stored.
    """

    id: str
    score: float
    fields: dict[str, str]
    payload: dict[str, Any]


@dataclass(slots=True)
class _Entry:
    id: str
    fields: dict[str, str]
    payload: dict[str, Any]
    order: int
    folded: list[str] = field(default_factory=list)

    def hit(self, score: float = 1.0) -> Hit:
        return Hit(id=self.id, score=score, fields=self.fields, payload=self.payload)


class Catalog:
    """In-memory items of one skill, in the order they were first added."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._added = 0

    async def upsert(
        self, id: str, fields: dict[str, str], payload: dict[str, Any] | None = None
    ) -> None:
        """Add an item, or replace the one with this ``id`` (keeping its place in the order)."""
        previous = self._entries.get(id)
        if previous is None:
            order, self._added = self._added, self._added + 1
        else:
            order = previous.order
        self._entries[id] = _Entry(
            id=id,
            fields=dict(fields),
            payload=dict(payload or {}),
            order=order,
            folded=[_fold(value) for value in fields.values()],
        )

    async def search(self, query: str, limit: int = 10) -> list[Hit]:
        """The ``limit`` best matches for ``query``, best first (ties: older first).

        Items that share nothing with the query (score 0) are left out; an
        empty query finds nothing.
        """
        if not query:
            return []
        folded_query = _fold(query)
        scored: list[tuple[float, int, _Entry]] = []
        for entry in self._entries.values():
            best = max((_score(folded_query, text) for text in entry.folded), default=0.0)
            if best > 0:
                scored.append((best, entry.order, entry))
        scored.sort(key=lambda row: (-row[0], row[1]))
        return [entry.hit(score) for score, _order, entry in scored[:limit]]

    async def get(self, id: str) -> Hit | None:
        """The item with exactly this ``id``, or None."""
        entry = self._entries.get(id)
        return entry.hit() if entry is not None else None

    def as_prompt_lines(
        self,
        limit: int = 50,
        header: str | None = None,
        line: Callable[[Hit], str] | None = None,
        overflow: str | None = None,
    ) -> str:
        """The items as text for the model's instructions ("" when empty).

        ``header:`` first if given, then one line per item in insertion
        order (``line(hit)``, by default ``- <first field>``), at most
        ``limit``; beyond that, ``overflow`` (by default, as in Huxley, a
        Spanish "(y N más …)" line).
        """
        if not self._entries:
            return ""
        render = line if line is not None else _first_field_line
        ordered = self._ordered()
        lines = [f"{header}:"] if header else []
        lines.extend(render(entry.hit()) for entry in ordered[:limit])
        hidden = len(ordered) - limit
        if hidden > 0:
            lines.append(
                overflow if overflow is not None else f"(y {hidden} más; búscalos por su nombre)"
            )
        return "\n".join(lines)

    def _ordered(self) -> list[_Entry]:
        return sorted(self._entries.values(), key=lambda entry: entry.order)

    def __iter__(self) -> Iterator[Hit]:
        """Every item, in insertion order, with score 1.0."""
        return iter([entry.hit() for entry in self._ordered()])

    def __len__(self) -> int:
        return len(self._entries)


def _first_field_line(hit: Hit) -> str:
    return f"- {next(iter(hit.fields.values()), hit.id)}"


__all__ = ["Catalog", "Hit"]
