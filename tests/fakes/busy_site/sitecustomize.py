"""A busy Python thread in whatever process starts with this folder on PYTHONPATH and
``HUXLEYD_TEST_BUSY_THREAD=1``: a skill's tool doing CPU work in pure Python, holding
the GIL in 5 ms slices for the life of the process (the daemon-level tests of the
speaker path put it in a real ``huxleyd``)."""

from __future__ import annotations

import os
import threading


def _spin() -> None:
    while True:
        total = 0
        for i in range(10_000):
            total += i * i


if os.environ.get("HUXLEYD_TEST_BUSY_THREAD") == "1":
    threading.Thread(target=_spin, name="test-busy", daemon=True).start()
