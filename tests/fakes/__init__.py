"""Fakes that record and assert (conventions rule 12, docs/conventions.md)."""
