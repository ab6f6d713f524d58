"""``--allow-sdist`` builds run as the build user, in a folder it owns, and
only the wheels built for the request come out (never the stubs that stand
for what the skills environment holds, never a symlink).

Building a real source package needs an index for its build backend, so the
skills environment's interpreter here is a small shell script speaking the
``python -m pip wheel`` arguments: it records who ran it and where, and
writes the wheels a build would.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.control.install.pins import Installed
from huxleyd.control.install.requests import IndexOptions, SkillPackageError
from huxleyd.control.install.skillbuild import BUILD_USER, build_wheels, unprivileged
from huxleyd.control.install.wheelcheck import read_wheel
from huxleyd.skillhost.skillenv import SkillsEnv

FAKE_PIP = r"""#!/bin/sh
wheeldir=""; nodeps=0; prev=""; last=""
for a in "$@"; do
  [ "$prev" = "--wheel-dir" ] && wheeldir="$a"
  [ "$a" = "--no-deps" ] && nodeps=1
  prev="$a"; last="$a"
done
echo "$(id -u) $HOME $(pwd)" >> "$HOME/who"
if [ "$last" = "./broken" ]; then echo "ERROR: setup.py failed" >&2; exit 1; fi
if [ $nodeps = 1 ]; then : > "$wheeldir/weather_skill-1.2-py3-none-any.whl"; exit 0; fi
cp "$(dirname "$wheeldir")"/stubs/*.whl "$wheeldir"/
: > "$wheeldir/weather_skill-1.2-py3-none-any.whl"
: > "$wheeldir/pyowm-3.0-py3-none-any.whl"
ln -s /etc/hostname "$wheeldir/sneaky-1.0-py3-none-any.whl"
"""

PRESENT = {"huxley-sdk": Installed("huxley-sdk", "0.1.2+huxleyd", ())}


@pytest.fixture
def env() -> Iterator[SkillsEnv]:
    """A skills environment whose interpreter the build user may run."""
    root = Path(tempfile.mkdtemp(prefix="huxley-sdist-test-"))
    root.chmod(0o755)
    try:
        env = SkillsEnv(root / "env")
        env.python.parent.mkdir(parents=True, mode=0o755)
        env.python.write_text(FAKE_PIP)
        env.python.chmod(0o755)
        yield env
    finally:
        shutil.rmtree(root)


def expected_uid() -> int:
    return pwd.getpwnam(BUILD_USER).pw_uid if os.geteuid() == 0 else os.geteuid()


def test_only_the_requested_wheels_come_out_built_by_the_build_user(env: SkillsEnv) -> None:
    with unprivileged(env) as builder:
        folder = builder.folder
        assert folder.stat().st_uid == expected_uid()
        assert builder.home.stat().st_uid == expected_uid()
        request, out = build_wheels(builder, "./weather", IndexOptions(no_index=True), PRESENT)
        assert request == "weather_skill==1.2"
        assert sorted(p.name for p in out.iterdir()) == [
            "pyowm-3.0-py3-none-any.whl",
            "weather_skill-1.2-py3-none-any.whl",
        ]
        assert out.stat().st_uid == os.geteuid()  # root's copy, not the builder's
        assert stat.S_IMODE(out.stat().st_mode) == 0o755
        runs = (builder.home / "who").read_text().splitlines()
        assert runs == [f"{expected_uid()} {builder.home} {builder.home}"] * 2
        stub = next((folder / "stubs").glob("*.whl"))
        assert read_wheel(stub).version == "0.1.2+huxleyd"  # a valid, empty wheel
        assert "huxley-sdk==0.1.2+huxleyd" in (folder / "constraints.txt").read_text()
    assert not folder.exists()


def test_a_failed_build_says_who_built_it_and_pips_error(env: SkillsEnv) -> None:
    who = f" as {BUILD_USER}" if os.geteuid() == 0 else ""
    with unprivileged(env) as builder, pytest.raises(SkillPackageError) as caught:
        build_wheels(builder, "./broken", IndexOptions(), PRESENT)
    assert str(caught.value) == f"cannot build ./broken from source{who}: ERROR: setup.py failed"


def test_an_interpreter_the_builder_cannot_run_is_one_line(tmp_path: Path) -> None:
    missing = SkillsEnv(tmp_path / "missing")
    with unprivileged(missing) as builder, pytest.raises(SkillPackageError) as caught:
        builder.pip(["wheel", "x"])
    assert str(caught.value).startswith("cannot run pip")
