"""All or nothing for first boot: every change is recorded with its undo.

:class:`Transaction` writes files under a root directory and runs commands
through an injected runner; each change first records how to take it back
(the file's old bytes, mode or link target, or that it did not exist; the
command that reverses a command). :meth:`Transaction.rollback` undoes them
newest first, so a failure at any step leaves the system as it was. Work is
grouped in named steps (:meth:`Transaction.step`): a failure says which step
and what the user can do about it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Runner", "StepFailed", "Transaction", "write_file"]

Runner = Callable[[Sequence[str]], None]
"""Runs a command (argv) on the target; raises when it fails."""


class StepFailed(Exception):
    """A step of first boot failed: which, why, and what the user can do."""

    def __init__(self, step: str, cause: BaseException, fix: str) -> None:
        self.step = step
        self.cause = cause
        self.fix = fix
        self.rollback_failures: list[str] = []
        """What the rollback could not undo (empty: the system is as before)."""
        super().__init__(f"{step}: {type(cause).__name__}: {cause}")


def write_file(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` atomically with ``data`` at exactly ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".firstboot-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow it
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


@dataclass(frozen=True, slots=True)
class _Before:
    """A path as it was before the transaction touched it."""

    path: Path
    link: str | None = None
    data: bytes | None = None
    mode: int = 0o644

    @classmethod
    def of(cls, path: Path) -> _Before:
        if path.is_symlink():
            return cls(path, link=os.readlink(path))
        if path.is_file():
            return cls(path, data=path.read_bytes(), mode=path.stat().st_mode & 0o7777)
        return cls(path)

    def restore(self) -> None:
        if self.link is not None:
            self.path.unlink(missing_ok=True)
            self.path.symlink_to(self.link)
        elif self.data is not None:
            self.path.unlink(missing_ok=True)  # a symlink put in its place
            write_file(self.path, self.data, self.mode)
        else:
            self.path.unlink(missing_ok=True)


class Transaction:
    """Changes under ``root``, each undoable; see the module docstring."""

    def __init__(self, root: Path, run: Runner) -> None:
        self.root = root
        self._run = run
        self._undo: list[Callable[[], None]] = []
        self._saved: set[Path] = set()
        self._dirs: list[Path] = []
        self.step_name = ""

    @contextmanager
    def step(self, name: str, fix: str) -> Iterator[None]:
        """Run a block as the step ``name``; any error becomes :class:`StepFailed`."""
        self.step_name = name
        try:
            yield
        except StepFailed:
            raise
        except Exception as exc:
            raise StepFailed(name, exc, fix) from exc

    def _save(self, path: Path) -> None:
        """Record ``path`` as it is now (once: the oldest state is the one to restore)."""
        missing = [p for p in reversed(path.parents) if not p.exists()]
        for directory in missing:  # created here: removed again if left empty
            directory.mkdir()
            self._dirs.append(directory)
        if path not in self._saved:
            self._saved.add(path)
            self._undo.append(_Before.of(path).restore)

    def write(self, relative: str, text: str, mode: int = 0o644) -> Path:
        path = self.root / relative
        self._save(path)
        if path.is_symlink():
            path.unlink()
        write_file(path, text.encode(), mode)
        return path

    def chmod(self, relative: str, mode: int) -> None:
        path = self.root / relative
        old = path.stat().st_mode & 0o7777
        path.chmod(mode)
        self._undo.append(lambda: path.chmod(old))

    def symlink(self, relative: str, target: str) -> None:
        path = self.root / relative
        self._save(path)
        path.unlink(missing_ok=True)
        path.symlink_to(target)

    def unlink(self, relative: str) -> None:
        path = self.root / relative
        self._save(path)
        path.unlink(missing_ok=True)

    def run(self, argv: Sequence[str], *, undo: Sequence[str] | None = None) -> None:
        """Run ``argv``; on rollback, run ``undo`` (None: nothing to take back)."""
        if undo is not None:
            # Recorded before the command runs: one that fails half way is
            # taken back too (undo commands are safe on an unchanged system).
            self._undo.append(lambda: self._run(list(undo)))
        self._run(list(argv))

    def on_rollback(self, action: Callable[[], None]) -> None:
        """An undo of our own (e.g. files that a command created)."""
        self._undo.append(action)

    def rollback(self) -> list[str]:
        """Undo every change, newest first; what could not be undone (empty: all)."""
        failed: list[str] = []
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception as exc:  # keep undoing the rest; the caller reports these
                failed.append(f"{type(exc).__name__}: {exc}")
        for directory in reversed(self._dirs):
            with contextlib.suppress(OSError):  # not empty: something else lives there now
                directory.rmdir()
        self._undo.clear()
        return failed
