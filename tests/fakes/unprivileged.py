"""Whether a user other than root can run an interpreter at all.

Tests that run Python as another user (the skill host's user, the readers of
the control socket) need an interpreter that user can load. A Python built
with a shared libpython whose RUNPATH lies in a folder only root may enter
(pyenv under ``/root``) starts for root and dies for everyone else with
"error while loading shared libraries". That is this machine's install, not
the code under test: such tests skip on that interpreter and say why, and run
on the legs whose interpreter other users can load (a device's is
``/usr/bin/python3``).
"""

from __future__ import annotations

import functools
import subprocess

NOBODY = "65534"


@functools.cache
def why_others_cannot_run(python: str) -> str | None:
    """None when ``nobody`` can run ``python``; else what the loader said."""
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            python,
            "-c",
            "pass",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return None
    lines = (done.stderr.strip() or f"exit {done.returncode}").splitlines()
    return f"{python} cannot be run by an unprivileged user here: {lines[-1]}"
