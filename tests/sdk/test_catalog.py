"""A skill's catalog: folded fuzzy search, stable order, the prompt lines Huxley writes."""

from __future__ import annotations

import itertools

from huxley_sdk.catalog import Catalog, Hit


async def books() -> Catalog:
    catalog = Catalog()
    await catalog.upsert("b1", {"title": "Cien años de soledad", "author": "García Márquez"})
    await catalog.upsert("b2", {"title": "El amor en los tiempos del cólera"}, {"path": "b2.m4b"})
    await catalog.upsert("b3", {"title": "Rayuela", "author": "Cortázar"})
    return catalog


async def test_search_folds_case_and_accents_and_scores_the_best_field() -> None:
    catalog = await books()
    hits = await catalog.search("GARCIA MARQUEZ")
    assert hits[0].id == "b1"
    assert hits[0].score == 1.0  # the author field matches exactly once folded
    assert (await catalog.search("cortazar"))[0].id == "b3"


async def test_search_ranks_best_first_leaves_out_zero_and_keeps_the_limit() -> None:
    catalog = await books()
    hits = await catalog.search("rayuela")
    assert hits[0].id == "b3"
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert len(await catalog.search("a", limit=2)) == 2 < len(await catalog.search("a"))
    assert await catalog.search("") == []
    assert await catalog.search("xxxx") == []  # shares no character with any field


async def test_ties_go_to_the_older_item_and_upsert_keeps_the_place() -> None:
    catalog = Catalog()
    await catalog.upsert("first", {"name": "radio uno"})
    await catalog.upsert("second", {"name": "radio uno"})
    assert [h.id for h in await catalog.search("radio uno")] == ["first", "second"]
    await catalog.upsert("first", {"name": "radio dos"}, {"url": "x"})
    assert [h.id for h in catalog] == ["first", "second"]  # replaced in place
    assert len(catalog) == 2
    assert await catalog.get("first") == Hit("first", 1.0, {"name": "radio dos"}, {"url": "x"})
    assert await catalog.get("missing") is None


async def test_the_stored_fields_are_copies() -> None:
    catalog = Catalog()
    fields = {"name": "Jazz FM"}
    await catalog.upsert("j", fields)
    fields["name"] = "changed"
    hit = await catalog.get("j")
    assert hit is not None and hit.fields == {"name": "Jazz FM"}


async def test_prompt_lines_in_order_with_header_limit_and_spanish_overflow() -> None:
    assert Catalog().as_prompt_lines(header="Libros") == ""
    catalog = await books()
    assert catalog.as_prompt_lines(header="Libros", limit=2) == (
        "Libros:\n"
        "- Cien años de soledad\n"
        "- El amor en los tiempos del cólera\n"
        "(y 1 más; búscalos por su nombre)"
    )
    custom = catalog.as_prompt_lines(line=lambda h: f"* {h.id}", limit=1, overflow="…")
    assert custom == "* b1\n…"
