"""Every file of an environment, by hash: what an install or a removal really changed.

``pip freeze`` compares names and versions; a wheel that overwrote
``websockets/__init__.py`` and was uninstalled again left it "as before" by
that measure while the file was gone. So a skill install and a removal are
checked on a :func:`manifest` of every file under the skills environment
(sha256 of its bytes; a symlink by its target), taken before and after.

:func:`owners` reads the RECORD of every distribution installed in a
``site-packages``: which distribution owns which path, and which top-level
names each one holds (what a new wheel may not write into).
"""

from __future__ import annotations

import csv
import hashlib
import importlib.metadata as metadata
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

Manifest = dict[str, str]
"""Path relative to the root (POSIX) → ``sha256:<hex>``, or ``link:<target>``."""


@dataclass(slots=True)
class Hasher:
    """Hashes files; a file whose inode, size, mtime and ctime did not move since it
    was hashed is not read again (as git's index does: every write moves the
    ctime, and no system call sets it back). :meth:`load` and :meth:`save`
    keep what was hashed between two runs of huxleyctl, in a root-only file."""

    _seen: dict[str, tuple[tuple[int, int, int, int], str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Hasher:
        try:
            raw = json.loads(path.read_text())
            seen = {k: ((v[0], v[1], v[2], v[3]), str(v[4])) for k, v in raw.items()}
        except (OSError, ValueError, TypeError, IndexError, AttributeError):
            seen = {}
        return cls(seen)

    def save(self, path: Path) -> None:
        data = {k: [*key, value] for k, (key, value) in self._seen.items()}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.chmod(0o600)
        tmp.replace(path)

    def digest(self, path: str, st: os.stat_result) -> str:
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = self._seen.get(path)
        if known is not None and known[0] == key:
            return known[1]
        with open(path, "rb") as fh:
            value = "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()
        self._seen[path] = (key, value)
        return value


def sha256_of(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def manifest(root: Path, *, skip: Iterable[str] = (), hasher: Hasher | None = None) -> Manifest:
    """Every file under ``root`` (not following symlinks), except the top-level ``skip``."""
    hasher = hasher or Hasher()
    skipped = set(skip)
    out: Manifest = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d not in skipped]
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            full = os.path.join(folder, name)
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = "link:" + os.readlink(full)
            elif os.path.isfile(full):
                out[rel] = hasher.digest(full, st)
            else:
                out[rel] = f"special:{st.st_mode:o}"
    return out


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """``+path`` (new), ``-path`` (gone), ``~path`` (changed), sorted by path."""
    out: list[str] = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            out.append(f"+{path}")
        elif path not in after:
            out.append(f"-{path}")
        elif before[path] != after[path]:
            out.append(f"~{path}")
    return out


def summary(changes: list[str], *, limit: int = 5) -> str:
    """The first few differences, and how many more."""
    shown = ", ".join(changes[:limit])
    more = len(changes) - limit
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class Owners:
    """Who owns what in one ``site-packages``."""

    paths: dict[str, str]
    """Path relative to site-packages (normalised) → distribution name."""
    tops: dict[str, str]
    """Top-level name (``numpy``, ``six.py`` as ``six``) → distribution name."""
    packages: frozenset[str]
    """Top-level names that are regular packages or modules (not namespaces)."""

    def adding(self, name: str, files: Iterable[str]) -> Owners:
        """These owners and distribution ``name`` holding ``files``."""
        paths, tops, packages = dict(self.paths), dict(self.tops), set(self.packages)
        for rel in files:
            _own(rel, name, paths, tops, packages)
        return Owners(paths, tops, frozenset(packages))


def _own(
    rel: str, name: str, paths: dict[str, str], tops: dict[str, str], packages: set[str]
) -> None:
    paths.setdefault(rel, name)
    if rel.startswith("..") or ".dist-info" in rel.split("/", 1)[0]:
        return
    top = top_name(rel)
    tops.setdefault(top, name)
    parts = PurePosixPath(rel).parts
    if len(parts) == 1 or parts[1:] == ("__init__.py",):
        packages.add(top)


def top_name(path: str) -> str:
    """The import name a site-packages path belongs to (``six.py`` → ``six``)."""
    first = PurePosixPath(path).parts[0]
    for suffix in (".py", ".pyc"):
        if first.endswith(suffix):
            return first[: -len(suffix)]
    if "." in first and not first.endswith((".dist-info", ".data", ".libs")):
        return first.split(".", 1)[0]  # an extension module: name.cpython-311-...so
    return first


def owners(site_packages: Path) -> Owners:
    """Read the RECORD of every distribution in ``site_packages``."""
    paths: dict[str, str] = {}
    tops: dict[str, str] = {}
    packages: set[str] = set()
    root = site_packages.resolve()
    for dist in metadata.distributions(path=[str(site_packages)]):
        name = dist.metadata["Name"] or "?"
        for row in csv.reader((dist.read_text("RECORD") or "").splitlines()):
            if not row:
                continue
            _own(
                os.path.relpath(os.path.normpath(root / row[0]), root), name, paths, tops, packages
            )
    return Owners(paths, tops, frozenset(packages))
