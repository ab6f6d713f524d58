"""The image's file list (image/files-manifest.py) and the comparison of two
builds (image/compare-builds.sh), on real directory trees: the same tree made
twice (other inode times, other creation order) compares equal; a changed
mode, owner, mtime, content or link target is named by path."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EPOCH = 1796000000


def tree(root: Path, *, order: int = 1) -> Path:
    root.mkdir()
    entries = [("etc/hostname", "huxley\n"), ("opt/huxleyd/releases/0.1.0/venv/bin/huxleyd", "#!")]
    for path, text in entries[::order]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "opt/huxleyd/current").symlink_to("releases/0.1.0")
    (root / "opt/huxleyd/releases/0.1.0/venv/bin/huxleyd").chmod(0o755)
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(Path(top) / name, (EPOCH, EPOCH), follow_symlinks=False)
    os.utime(root, (EPOCH, EPOCH))
    return root


def files(root: Path, out: Path) -> Path:
    text = subprocess.run(
        [sys.executable, str(REPO / "image/files-manifest.py"), str(root)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    out.write_text(text)
    return out


def compare(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(REPO / "image/compare-builds.sh"), str(a), str(b)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_same_tree_built_twice_compares_equal(tmp_path: Path) -> None:
    a = files(tree(tmp_path / "a"), tmp_path / "a.files")
    b = files(tree(tmp_path / "b", order=-1), tmp_path / "b.files")
    result = compare(a, b)
    assert result.returncode == 0, result.stdout
    lines = [ln.split("\t") for ln in a.read_text().splitlines() if not ln.startswith("#")]
    by_path = {fields[0]: fields for fields in lines}
    assert by_path["/opt/huxleyd/current"][1:] == [
        "l",
        "0777",
        "0",
        "0",
        str(EPOCH),
        "releases/0.1.0",
    ]
    daemon = by_path["/opt/huxleyd/releases/0.1.0/venv/bin/huxleyd"]
    assert daemon[1:6] == ["f", "0755", "0", "0", str(EPOCH)]
    assert daemon[6:] == ["2", hashlib.sha256(b"#!").hexdigest()]


def rewrite(root: Path) -> None:
    (root / "etc/hostname").write_text("kitchen\n")
    os.utime(root / "etc/hostname", (EPOCH, EPOCH))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r / "etc/hostname").chmod(0o600),
        lambda r: os.utime(r / "etc/hostname", (EPOCH + 1, EPOCH + 1)),
        rewrite,
        lambda r: os.chown(r / "etc/hostname", 1, 1),
    ],
    ids=["mode", "mtime", "content", "owner"],
)
def test_a_difference_is_named_by_its_path(tmp_path: Path, change: Callable[[Path], None]) -> None:
    a = files(tree(tmp_path / "a"), tmp_path / "a.files")
    root = tree(tmp_path / "b")
    change(root)
    b = files(root, tmp_path / "b.files")
    result = compare(a, b)
    assert result.returncode == 1
    changed = {ln.split("\t")[0][2:] for ln in result.stdout.splitlines() if ln[:2] in ("- ", "+ ")}
    assert changed == {"/etc/hostname"}
    assert "2 differing lines" in result.stdout


def test_a_link_moved_to_another_release_is_named(tmp_path: Path) -> None:
    a = files(tree(tmp_path / "a"), tmp_path / "a.files")
    root = tree(tmp_path / "b")
    (root / "opt/huxleyd/current").unlink()
    (root / "opt/huxleyd/current").symlink_to("releases/0.1.1")
    os.utime(root / "opt/huxleyd/current", (EPOCH, EPOCH), follow_symlinks=False)
    result = compare(a, files(root, tmp_path / "b.files"))
    assert result.returncode == 1 and "releases/0.1.1" in result.stdout
