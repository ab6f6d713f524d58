"""Which C extensions this test run loads, and whether they are the ones in the tree.

An editable install builds the extensions in place once; a later edit of a
``.c`` file does not rebuild them, so ``pytest`` would quietly test the old
C (``make setup`` rebuilds when a source changed: the Makefile's
``.extensions`` stamp). And each extension is ``optional`` in setup.py so that
a device without a compiler still installs: a build that failed there leaves
the pure-Python fallback, and the tests of the C skip. Both are right for a
device and wrong for ``make test``, which claims to have tested the C.

So the session starts by asking, for every extension named in setup.py (the
one list): is it importable, and is its shared object newer than every C
source and header? Stale is always an error. Missing is an error when
``HUXLEYD_REQUIRE_EXTENSIONS=1`` (set by ``make test``), a note otherwise.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_EXTENSION = re.compile(r'Extension\(\s*"([\w.]+)"')


@dataclass(frozen=True)
class ExtensionState:
    name: str
    path: Path | None
    stale_against: Path | None = None

    @property
    def missing(self) -> bool:
        return self.path is None


def declared_extensions(setup_py: Path = ROOT / "setup.py") -> list[str]:
    """The extension modules setup.py builds, in its order."""
    return _EXTENSION.findall(setup_py.read_text(encoding="utf-8"))


def c_sources(root: Path = ROOT) -> list[Path]:
    audio = root / "huxleyd" / "audio" / "csrc"
    return sorted([*audio.glob("*.c"), *audio.glob("*.h"), root / "setup.py"])


def _second(path: Path) -> int:
    # whole seconds: setuptools copies the built object in place with its
    # modification time truncated to the second
    return int(path.stat().st_mtime)


def inspect_extensions(root: Path = ROOT) -> list[ExtensionState]:
    sources = c_sources(root)
    newest = max(sources, key=_second)
    states = []
    for name in declared_extensions(root / "setup.py"):
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        stale = None
        if origin is not None and _second(origin) < _second(newest):
            stale = newest
        states.append(ExtensionState(name, origin, stale))
    return states


def problems(states: list[ExtensionState], *, require: bool) -> list[str]:
    """One line per extension this run must not go ahead with."""
    lines = []
    for state in states:
        if state.stale_against is not None:
            lines.append(
                f"{state.name}: {state.path} is older than {state.stale_against.name}: "
                "the tests would run the old C; run `make setup` (it rebuilds)"
            )
        elif state.missing and require:
            lines.append(
                f"{state.name}: not built (setup.py marks it optional, so a failed compile "
                "only warned): see the venv's pip.log, or run `make setup`"
            )
    return lines
