"""A real installed distribution for tests: a package plus a ``.dist-info``
with entry points, put on ``sys.path`` so ``importlib.metadata`` finds it
exactly as it finds a pip-installed skill."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def installed_distribution(
    site: Path,
    *,
    name: str,
    module: str,
    source: str,
    entry_points: Mapping[str, str],
    group: str = "huxley.skills",
) -> Iterator[Path]:
    """Install ``module`` (one ``__init__.py`` holding ``source``) as distribution
    ``name`` with ``entry_points`` (entry name → ``module:attr``) in ``group``.
    Yields the site directory (for a subprocess's PYTHONPATH)."""
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(source)
    dist = site / f"{name.replace('-', '_')}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{entry} = {target}\n" for entry, target in entry_points.items())
    (dist / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    with on_sys_path(site, {module}):
        yield site


@contextmanager
def installed_skill(site: Path, dist: str, entry_point: str, source: str) -> Iterator[Path]:
    """:func:`installed_distribution` of one skill: ``entry_point`` reads as in
    ``entry_points.txt`` (``"timers = their_timers:TimersSkill"``), and its
    module holds ``source``."""
    entry, target = (part.strip() for part in entry_point.split("="))
    module = target.split(":")[0]
    with installed_distribution(
        site, name=dist, module=module, source=source, entry_points={entry: target}
    ) as path:
        yield path


@contextmanager
def on_sys_path(site: Path, top_level: set[str]) -> Iterator[Path]:
    """Put ``site`` first on ``sys.path``; at the end take it off and forget the
    imported ``top_level`` packages (and their submodules)."""
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        for name in list(sys.modules):
            if name.split(".", 1)[0] in top_level:
                sys.modules.pop(name, None)
        importlib.invalidate_caches()
