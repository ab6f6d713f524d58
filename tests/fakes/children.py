"""Python children that answer in JSON: how tests and benches run what must live
in its own process (an ALSA configuration in HOME, real-time scheduling)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_json_child(
    argv: list[str], env: dict[str, str], *, timeout_s: float, cwd: Path | None = None
) -> Any:
    """Run ``python argv…``; its last stdout line is JSON: return it parsed.

    A child that fails raises RuntimeError with the tail of its stderr."""
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"child {' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])
