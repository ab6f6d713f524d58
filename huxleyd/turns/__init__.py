"""Turns: the coordinator state machine, focus, media, claims and injects.
Pure logic: it talks to the provider, the mixer and the skills through
small interfaces, never to sockets or devices directly."""
