"""The skill host process: third-party skills, in their own process, as their own user.

Runs with the *skills environment's* interpreter, which has ``huxley_sdk`` and
the skill packages but none of the daemon's dependencies: modules here import
the standard library, ``huxley_sdk`` and each other, never ``huxleyd``.
``link`` is the wire (typed messages, shared with the daemon); ``child`` is
the process's side of it (``python -m huxley_skillhost``).
"""
