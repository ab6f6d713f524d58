"""The unit's system call filter lets the daemon do what it does at start.

The filter (``SystemCallFilter=`` lines, applied in order as systemd does)
is expanded with ``systemd-analyze syscall-filter``; the system calls come
from the real control server run under ``strace``. A call the filter drops
fails with EPERM on the device only (the image's journal once showed
``control_chgrp_failed``: ``@privileged`` holds ``@chown``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "huxleyd.service"
ANALYZE = shutil.which("systemd-analyze")
STRACE = shutil.which("strace")

# The control server binds its socket and gives it a group the process is in
# (its own: any user may chgrp to it), then closes.
_SERVE = """
import asyncio, grp, os, sys
from pathlib import Path
from huxleyd.config.control_socket import ControlSettings
from huxleyd.control.server import ControlServer
from tests.fakes.control_handler import FakeControlHandler

async def main() -> None:
    group = grp.getgrgid(os.getegid()).gr_name
    cfg = ControlSettings(socket_path=Path(sys.argv[1]), socket_group=group)
    async with ControlServer(FakeControlHandler(), cfg):
        pass

asyncio.run(main())
"""


def _expand(name: str, analyze: str) -> set[str]:
    """The system calls of a filter entry (a set ``@name`` expanded, nested sets too)."""
    if not name.startswith("@"):
        return {name}
    out = subprocess.run(
        [analyze, "syscall-filter", name], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    calls: set[str] = set()
    for line in out.splitlines()[1:]:
        entry = line.strip()
        if not line.startswith(" ") or not entry or entry.startswith("#"):
            continue
        calls |= _expand(entry, analyze)
    return calls


def _allowed(unit_text: str, analyze: str) -> set[str]:
    """The unit's allow-list: the first line sets it, ``~`` lines remove, others add."""
    allowed: set[str] = set()
    for line in unit_text.splitlines():
        key, _, value = line.strip().partition("=")
        if key != "SystemCallFilter":
            continue
        deny = value.startswith("~")
        calls = set().union(*(_expand(n, analyze) for n in value.lstrip("~").split()))
        allowed = allowed - calls if deny else allowed | calls
    return allowed


@pytest.mark.skipif(ANALYZE is None or STRACE is None, reason="needs systemd-analyze and strace")
def test_the_filter_lets_the_control_server_give_its_socket_a_group(tmp_path: Path) -> None:
    assert ANALYZE is not None and STRACE is not None
    trace = tmp_path / "trace"
    subprocess.run(
        [STRACE, "-f", "-qq", "-o", str(trace), sys.executable, "-c", _SERVE, str(tmp_path / "s")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=120,
    )
    traced = set(re.findall(r"^\d+\s+(\w+)\(", trace.read_text(), re.MULTILINE))
    chgrp = {call for call in traced if "chown" in call}
    assert chgrp, "the control server did not chgrp its socket"
    assert chgrp <= _allowed(UNIT.read_text(), ANALYZE), chgrp
