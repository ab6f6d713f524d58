"""Storage: the persona's SQLite database and opening it whatever state the file is in.

Imports nothing. ``db`` is the database (WAL, one executor thread,
per-skill secrets); ``recovery`` opens it however the file was left (moved
aside, or in memory) so storage never stops the start.
"""
