"""doctor's advice fits the cause, and a dev setup's missing service user is
skipped, not a failure (issue 41, point 2).

Before: a read-only state directory got "chown", a state directory on /proc
got "free space", and ``doctor`` on the README's own ``make run`` exited 1
because the service user ``huxley`` did not exist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from huxleyd.control.doctor import check_disk_space, check_service_user


def test_a_missing_service_user_on_a_dev_setup_is_skipped_and_said() -> None:
    if check_service_user("huxley", euid=0, service=False).status == "ok":
        pytest.skip("this machine has the huxley account")
    check = check_service_user("huxley", euid=0, service=False)
    assert check.status == "skipped" and check.ok
    assert "not installed here (make run" in check.detail and "'huxley'" in check.detail
    # A name the admin wrote that does not exist is a mistake even here.
    assert check_service_user("no-such-huxley-user", euid=0, service=False).status == "fail"


def test_a_missing_service_user_of_an_installed_service_fails() -> None:
    check = check_service_user("no-such-huxley-user", euid=0, service=True)
    assert check.status == "fail" and "does not exist" in check.detail


def test_a_state_directory_on_proc_is_not_told_to_free_space() -> None:
    check = check_disk_space(Path("/proc/huxleyd"))
    assert check.status == "fail"
    assert "/proc" in check.detail and "free space" not in check.fix
    assert "storage.state_dir" in check.fix


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A real read-only mount (a bind mount remounted ro), as a card after errors."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount")
    target = tmp_path / "state"
    target.mkdir()
    bound = subprocess.run(["mount", "--bind", str(target), str(target)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.decode().strip()}")
    try:
        ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], capture_output=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {ro.stderr.decode().strip()}")
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_a_read_only_mount_is_not_told_to_chown(read_only_dir: Path) -> None:
    check = check_disk_space(read_only_dir)
    assert check.status == "fail"
    assert "read-only filesystem" in check.detail
    assert "chown" not in check.fix and "remount" in check.fix
