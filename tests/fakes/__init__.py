"""Fakes that record and assert (STYLE.md rule 12)."""
