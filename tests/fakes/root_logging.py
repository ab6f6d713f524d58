"""The root logger's handlers and level, put back after a test that runs code
which installs its own (``huxleyd.logs.setup`` from a ``main``).

Without it, the handler left behind writes to that test's captured stderr,
closed once the test ends: later log lines print "--- Logging error ---"
tracebacks into whatever a later test captures.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def root_logging_kept(*, quiet: bool = False) -> Iterator[None]:
    """Restore the root logger on exit; ``quiet``: log nowhere meanwhile."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    if quiet:
        for handler in handlers:
            root.removeHandler(handler)
        root.addHandler(logging.NullHandler())
    try:
        yield
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
