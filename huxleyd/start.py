"""The ``huxleyd`` console script: check the SDK, then start the daemon.

Everything under :mod:`huxleyd.app` imports ``huxley_sdk``; when that is
missing or is not ours (:mod:`huxleyd.skillhost.sdkcheck`), the admin gets one line
naming what is in its place and the repair, not an ``ImportError``
traceback. It exits 1: a restart cannot repair it, and systemd's start
limit ends the loop as "failed" with that line in the journal.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from huxleyd.skillhost.sdkcheck import sdk_problem

EXIT_BROKEN_SDK = 1


def main(argv: Sequence[str] | None = None) -> int:
    problem = sdk_problem()
    if problem is not None:
        print(f"huxleyd: {problem}", file=sys.stderr)
        return EXIT_BROKEN_SDK
    from huxleyd.app.main import main as start

    return start(argv)
