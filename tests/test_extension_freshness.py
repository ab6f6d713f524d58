"""make test refuses C extensions that are missing or older than their sources."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.fakes.extensions import declared_extensions, inspect_extensions, problems


def _tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "setup.py").write_text(
        'setup(ext_modules=[Extension(\n    "freshpkg.built",\n    sources=[]),'
        ' Extension("freshpkg.absent", sources=[])])\n'
    )
    (tmp_path / "huxleyd" / "audio" / "csrc").mkdir(parents=True)
    (tmp_path / "huxleyd" / "audio" / "csrc" / "_x.c").write_text("int x;\n")
    pkg = tmp_path / "site" / "freshpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "built.py").write_text("")  # stands in for the shared object
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "freshpkg", raising=False)
    return tmp_path


def _age(path: Path, seconds: int) -> None:
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))


def test_every_extension_setup_py_builds_is_checked() -> None:
    names = declared_extensions()
    assert "huxleyd.audio._rt" in names and "huxleyd.audio._dsp" in names


def test_an_extension_older_than_a_c_source_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path, monkeypatch)
    _age(root / "site" / "freshpkg" / "built.py", 60)
    (line,) = problems(inspect_extensions(root), require=False)
    assert line.startswith("freshpkg.built:") and "older than _x.c" in line


def test_a_fresh_extension_passes_and_a_missing_one_fails_only_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path, monkeypatch)
    for source in (root / "setup.py", root / "huxleyd" / "audio" / "csrc" / "_x.c"):
        _age(source, 60)
    states = inspect_extensions(root)
    assert problems(states, require=False) == []
    (line,) = problems(states, require=True)
    assert line.startswith("freshpkg.absent: not built")
