"""One daemon per state directory: the lock, not the socket (issue 41, point 3).

Before: with the socket's folder removed, a second daemon started on the
same configuration and both wrote one database. The lock is tried here by
a real second process, and end to end by a second ``huxleyd`` after the
first one's socket folder was removed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from huxleyd.app.instance import AlreadyRunningError, InstanceLock

TRY_LOCK = (
    "import sys; from pathlib import Path; from huxleyd.app.instance import InstanceLock, "
    "AlreadyRunningError\n"
    "try:\n    InstanceLock(Path(sys.argv[1])).acquire()\n"
    "except AlreadyRunningError as e:\n    print(e); sys.exit(3)\n"
)


def test_a_second_process_is_kept_out_until_the_first_lets_go(tmp_path: Path) -> None:
    state = tmp_path / "state"
    lock = InstanceLock(state)
    assert lock.acquire()
    second = subprocess.run(
        [sys.executable, "-c", TRY_LOCK, str(state)], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 3 and f"state directory {state}" in second.stdout
    with pytest.raises(AlreadyRunningError):
        InstanceLock(state).acquire()  # a second open file description: refused too
    lock.release()
    again = subprocess.run([sys.executable, "-c", TRY_LOCK, str(state)], timeout=60)
    assert again.returncode == 0


def test_a_read_only_state_directory_is_still_locked(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o555)
    try:
        lock = InstanceLock(state)
        assert lock.acquire()
        with pytest.raises(AlreadyRunningError):
            InstanceLock(state).acquire()
        lock.release()
    finally:
        state.chmod(0o755)


def test_a_second_daemon_is_refused_after_the_socket_was_removed(tmp_path: Path) -> None:
    from tests.e2e.process import DaemonProcess, write_daemon_config

    config = write_daemon_config(tmp_path, scenario='name = "idle"\n')
    first = DaemonProcess(config, log=tmp_path / "first.log")
    try:
        first.wait_for_log("daemon_started")
        first.socket.unlink()  # as rm -r /run/huxleyd does to it
        second = DaemonProcess(config, log=tmp_path / "second.log")
        try:
            status = second.proc.wait(timeout=60)
        finally:
            second.kill()
        out = second.output()
        assert status == 1, out
        assert "another huxleyd is running on the state directory" in out
        assert "daemon_started" not in out
    finally:
        first.terminate()
