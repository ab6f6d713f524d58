"""Where third-party skills live: an environment that is not the daemon's.

Skill packages (``huxleyctl skills install``) go into a virtual environment
of their own, the *skills environment*. Nothing in it is ever imported by
``huxleyd``, ``huxleyctl``, pip or any other root process: the daemon's
interpreter never has it on ``sys.path``, so a ``.pth`` file, a script or a
data file a skill ships cannot run in them. Only the skill host process
(started by the daemon, as the skill user) runs with this environment's
interpreter.

The skills environment is managed by its own pip (``python -m pip`` of its
own interpreter): pip run from the daemon's environment would treat the
daemon's ``bin/`` as the place for a package's scripts.

Where it is, in the order looked at:

1. ``HUXLEYD_SKILLS_ENV`` (tests, and an admin who wants it elsewhere);
2. :data:`INSTALLED_ROOT` when the daemon runs from an installed release
   (``sys.prefix`` under ``/opt/huxleyd``): outside every release, so an
   update keeps the installed skills;
3. ``var/skills-env`` in the source checkout (``make run``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV_VARIABLE", "INSTALLED_ROOT", "SkillsEnv", "skills_env"]

ENV_VARIABLE = "HUXLEYD_SKILLS_ENV"
"""Names the skills environment's folder explicitly."""

INSTALLED_ROOT = Path("/var/lib/huxleyd-skills/env")
"""The skills environment of an installed daemon (the image, ``make install``)."""

_INSTALLED_PREFIX = Path("/opt/huxleyd")


@dataclass(frozen=True, slots=True)
class SkillsEnv:
    """One skills environment: a venv folder, which may not exist yet."""

    root: Path

    @property
    def python(self) -> Path:
        """The environment's own interpreter (runs its pip and the skill host)."""
        return self.root / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        """Its ``site-packages`` (made with this interpreter's version)."""
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        return self.root / "lib" / version / "site-packages"

    def exists(self) -> bool:
        return self.python.exists()


def skills_env(environ: dict[str, str] | None = None, prefix: str | None = None) -> SkillsEnv:
    """The skills environment this daemon (or ``huxleyctl``) uses."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_VARIABLE)
    if explicit:
        return SkillsEnv(Path(explicit))
    here = Path(sys.prefix if prefix is None else prefix)
    if here == _INSTALLED_PREFIX or _INSTALLED_PREFIX in here.parents:
        return SkillsEnv(INSTALLED_ROOT)
    checkout = Path(__file__).resolve().parents[2]
    return SkillsEnv(checkout / "var" / "skills-env")
