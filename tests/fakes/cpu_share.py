"""A CPU cgroup with a share of one core: how the tests and the bench run the daemon
at a Raspberry Pi's speed on this machine (``bench.bench_pispeed`` says the scaling:
a Pi 4 is about 25 % of one core here).

cgroup v2's ``cpu.max`` where there is cgroup v2, else the v1 cpu controller's CFS
quota, with ``cpu.rt_runtime_us`` so SCHED_FIFO is still granted to the callbacks (the
quota throttles the Python threads; a FIFO thread is bounded by its RT runtime, as on
a Pi). Needs root; without a cgroup, :class:`NoCgroup` says why.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")
PI4_SHARE, PI4_PERIOD_US = 0.25, 10_000
"""The share the bench calls "a Pi 4" (25 % of one core, in 10 ms CFS periods)."""
RT_RUNTIME_US = 50_000
"""SCHED_FIFO time the group may use per second (the callbacks need ~1 %)."""


class NoCgroup(RuntimeError):
    """No CPU cgroup can be made here (not root, or no cpu controller)."""


@contextlib.contextmanager
def cpu_group(share: float, period_us: int) -> Iterator[Path]:
    """A CPU cgroup limited to ``share`` of one core; yields its ``cgroup.procs``
    (a child joins it by writing its pid there before it execs)."""
    quota = max(1000, round(share * period_us))
    v2 = (V2 / "cgroup.controllers").exists() and "cpu" in (V2 / "cgroup.controllers").read_text()
    root = V2 if v2 else V1
    if not (root / "cgroup.procs").exists():
        raise NoCgroup("no cgroup cpu controller mounted")
    group = root / f"huxleyd-share-{os.getpid()}"
    try:
        group.mkdir()
        if v2:
            (group / "cpu.max").write_text(f"{quota if share < 1 else 'max'} {period_us}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(period_us))
            (group / "cpu.cfs_quota_us").write_text(str(quota if share < 1 else -1))
            rt = group / "cpu.rt_runtime_us"
            if rt.exists():
                rt.write_text(str(RT_RUNTIME_US))
    except OSError as exc:
        with contextlib.suppress(OSError):
            group.rmdir()
        raise NoCgroup(f"cannot make a CPU cgroup: {exc}") from exc
    try:
        yield group / "cgroup.procs"
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()  # empty again once the child exited
