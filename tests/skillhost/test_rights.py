"""A third-party skill cannot read the key, the daemon's environment or its state.

The host runs as the skill user (``setpriv`` as root; the test creates the
user with ``useradd --system`` when it is missing). Everything probed sits
in a world-traversable folder, and a world-readable file beside them is
read, so each refusal is the file's own rights, never a folder in the way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.skillhost.skillenv import SkillsEnv
from tests.skillhost.rig import probe_rig

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the host switches to the skill user only as root (setpriv); this run is not root",
)
DENIED = {"error": "PermissionError", "errno": 13}


@pytest.fixture
def daemon_files() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="huxleyd-rights-"))
    base.chmod(0o755)
    (base / "openai.key").write_text("sk-the-daemons-key\n")
    (base / "openai.key").chmod(0o600)
    state = base / "state"
    state.mkdir(mode=0o700)
    (state / "huxleyd.db").write_text("the persona database")
    (base / "public.txt").write_text("anyone may read this")
    (base / "public.txt").chmod(0o644)
    yield base
    shutil.rmtree(base)


async def test_the_key_the_environ_and_the_state_are_refused(
    probe_env: SkillsEnv, tmp_path: Path, daemon_files: Path
) -> None:
    async with probe_rig(probe_env, tmp_path) as rig:
        assert await rig.output("read", path=str(daemon_files / "public.txt")) == {"read": True}
        for path in (
            daemon_files / "openai.key",
            Path(f"/proc/{os.getpid()}/environ"),
            daemon_files / "state",
            rig.db.path,
        ):
            assert await rig.output("read", path=str(path)) == DENIED, path
