"""``make mutate`` on a fresh clone: its scratch folder has every tracked file.

The scratch folder once linked a hand-kept list of folders, without
``setup.py`` (which tests read): on a fresh clone mutmut's baseline died with
FileNotFoundError. Here a real ``git clone`` of this checkout (tracked files
only, nothing built or left by hand) gets this ``scripts/mutate.py`` and
prepares its folder; every top-level name git tracks must be reachable there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    target = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--no-checkout", "--local", str(ROOT), str(target)], check=True
    )
    subprocess.run(["git", "checkout", "-q", "HEAD", "--", "."], cwd=target, check=True)
    shutil.copy2(ROOT / "scripts" / "mutate.py", target / "scripts" / "mutate.py")
    return target


def test_the_scratch_folder_of_a_fresh_clone_has_every_tracked_top_level_name(
    clone: Path,
) -> None:
    prepare = (
        "import sys; sys.path.insert(0, 'scripts'); import mutate; "
        "mutate.prepare(['huxleyd/degraded.py'], ['tests/faults'], fresh=True)"
    )
    subprocess.run([sys.executable, "-c", prepare], cwd=clone, check=True)
    scratch = clone / "build" / "mutate"
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {path.split("/", 1)[0] for path in tracked}
    assert "setup.py" in top
    for name in sorted(top):
        assert (scratch / name).exists(), f"{name} is not in the scratch folder"
    assert (scratch / "setup.py").read_bytes() == (clone / "setup.py").read_bytes()
    settings = (scratch / "pyproject.toml").read_text()
    assert '"setup.py"' in settings.split("[tool.mutmut]", 1)[1]  # also_copy: into mutants/
    assert not any(p.name == "build" for p in scratch.iterdir()), "nothing untracked"
