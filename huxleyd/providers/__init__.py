"""Realtime providers: one sans-I/O protocol core per provider, and the
shared websocket transport (connect, keepalive, reconnect with backoff)."""
