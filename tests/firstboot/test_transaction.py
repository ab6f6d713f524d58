"""First boot is all or nothing: whichever step fails, the system is exactly
as before, the setup file stays on FAT with an error file naming the step
and the fix, and no secret from the file is repeated anywhere."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from huxleyd.firstboot.__main__ import FAILURE_REPORT, main
from huxleyd.firstboot.apply import set_toml_value
from huxleyd.firstboot.transaction import Transaction

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-proj-Tr4nsAct10n_0123456789abcDEF"

SETUP = f"""
[device]
hostname = "kitchen"
board = "respeaker-2mic"
timezone = "Europe/Madrid"

[provider]
kind = "xai"
api_key = "{KEY}"

[wifi]
ssid = "home"
password = "12345678"
country = "ES"

[ssh]
enable = true
authorized_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBm me@laptop"]
"""


@pytest.fixture
def system(tmp_path: Path) -> Path:
    """A root shaped like the image's: config, zoneinfo, hosts, ssh.socket masked."""
    root = tmp_path / "root"
    etc = root / "etc/huxleyd"
    etc.mkdir(parents=True)
    config = (REPO / "config/huxleyd.toml").read_text()
    (etc / "huxleyd.toml").write_text(
        set_toml_value(config, "hardware", "boards_dir", str(REPO / "hw"))
    )
    zones = root / "usr/share/zoneinfo/Europe"
    zones.mkdir(parents=True)
    (zones / "Madrid").write_bytes(b"TZif2")
    (root / "etc/hostname").write_text("huxley\n")
    (root / "etc/hosts").write_text("127.0.0.1\tlocalhost\n127.0.1.1\thuxley\n")
    (root / "etc/localtime").symlink_to("/usr/share/zoneinfo/Etc/UTC")
    (root / "etc/default").mkdir()
    (root / "etc/default/raspi-firmware-custom").write_text("# image default\n")
    (root / "etc/ssh").mkdir()
    # The image enables units of its own, so the wants directory exists.
    (root / "etc/systemd/system/multi-user.target.wants").mkdir(parents=True)
    (root / "etc/systemd/system/ssh.socket").symlink_to("/dev/null")
    (root / "root").mkdir(mode=0o700)
    (tmp_path / "fat").mkdir()
    return root


def snapshot(root: Path) -> dict[str, tuple[str, object, int]]:
    """Every path under ``root``: kind, content or link target, mode."""
    seen: dict[str, tuple[str, object, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            mode = stat.S_IMODE(path.lstat().st_mode)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path), 0)
            elif path.is_dir():
                seen[rel] = ("dir", None, mode)
            else:
                seen[rel] = ("file", path.read_bytes(), mode)
    return seen


class System:
    """Stands in for the commands on ``root``: the files they change there
    (units enabled or masked, host keys), so a rollback has real work to undo.
    Fails the ``fail_at``-th command with a CalledProcessError, as run_command would."""

    def __init__(self, root: Path, fail_at: int | None = None) -> None:
        self.root = root
        self.fail_at = fail_at
        self.commands: list[list[str]] = []

    def run(self, argv: Sequence[str]) -> None:
        self.commands.append(list(argv))
        if self.fail_at is not None and len(self.commands) - 1 == self.fail_at:
            raise subprocess.CalledProcessError(1, list(argv))
        units = self.root / "etc/systemd/system"
        wants = units / "multi-user.target.wants"
        match list(argv):
            case ["ssh-keygen", "-A"]:
                (self.root / "etc/ssh/ssh_host_ed25519_key").write_text("private")
            case ["systemctl", "enable", unit]:
                (wants / unit).unlink(missing_ok=True)
                (wants / unit).symlink_to(f"/usr/lib/systemd/system/{unit}")
            case ["systemctl", "disable", unit]:
                (wants / unit).unlink(missing_ok=True)
            case ["systemctl", "unmask", unit]:
                (units / unit).unlink()
            case ["systemctl", "mask", unit]:  # idempotent, as systemctl's
                (units / unit).unlink(missing_ok=True)
                (units / unit).symlink_to("/dev/null")
            case _:
                pass


def run_main(root: Path, system: System, text: str = SETUP) -> tuple[int, Path]:
    setup = root.parent / "fat/huxleyd-setup.toml"
    setup.write_text(text)
    argv = [str(setup), "--root", str(root), "--share-hw", str(REPO / "hw"), "--no-reboot"]
    return main(argv, run=system.run), setup


def test_first_boot_starts_what_it_enables_in_this_boot(system: Path) -> None:
    """`systemctl enable` alone waits for the next boot, which may never come."""
    recorder = System(system)
    code, setup = run_main(system, recorder)
    assert code == 0
    commands = recorder.commands
    assert ["systemctl", "daemon-reload"] in commands  # the provider-key drop-in
    assert ["systemctl", "start", "--no-block", "wpa_supplicant@wlan0.service"] in commands
    assert ["systemctl", "start", "--no-block", "ssh.service"] in commands
    reload_networkd = [
        "systemctl",
        "try-reload-or-restart",
        "--no-block",
        "systemd-networkd.service",
    ]
    assert reload_networkd in commands
    enable = commands.index(["systemctl", "enable", "wpa_supplicant@wlan0.service"])
    assert enable < commands.index(
        ["systemctl", "start", "--no-block", "wpa_supplicant@wlan0.service"]
    )
    key = system / "etc/huxleyd/xai.key"
    assert key.read_text() == KEY + "\n" and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert not setup.exists()


def copy_of_the_card(system: Path, dest: Path) -> Path:
    """A fresh copy of the root and the FAT partition beside it; copies only
    those two, never the folder that holds earlier copies (which would grow
    with every case)."""
    shutil.copytree(system, dest / "root", symlinks=True)
    shutil.copytree(system.parent / "fat", dest / "fat", symlinks=True)
    return dest / "root"


def commands_of_a_full_setup(root: Path, tmp_path: Path) -> int:
    scratch = copy_of_the_card(root, tmp_path / "scratch")
    recorder = System(scratch)
    code, _ = run_main(scratch, recorder)
    assert code == 0
    return len(recorder.commands)


def test_whichever_command_fails_the_system_is_as_before(system: Path, tmp_path: Path) -> None:
    count = commands_of_a_full_setup(system, tmp_path)
    assert count >= 10  # hooks, reload, hostname, enable, ssh, starts
    for fail_at in range(count):
        root = copy_of_the_card(system, tmp_path / f"case{fail_at}")
        before = snapshot(root)
        recorder = System(root, fail_at=fail_at)
        code, setup = run_main(root, recorder)
        failed = recorder.commands[fail_at]
        assert code == 1, failed
        after = snapshot(root)
        after.pop(FAILURE_REPORT, None)
        for parent in Path(FAILURE_REPORT).parents:
            after.pop(str(parent), None)
        assert after == before, f"left changed after {failed} failed"
        assert setup.read_text() == SETUP  # stays on FAT, to be fixed
        error = (setup.parent / "huxleyd-setup.error.txt").read_text()
        assert "nothing was changed" in error and "What failed: the step" in error
        assert "Fix: " in error
        report = (root / FAILURE_REPORT).read_text()
        assert "the step" in report
        assert KEY not in error + report + "".join(map(str, recorder.commands))


def test_a_rollback_that_cannot_undo_says_so(system: Path) -> None:
    """Never "nothing was changed" when something was."""

    class Stubborn(System):
        def run(self, argv: Sequence[str]) -> None:
            if argv[:2] == ["systemctl", "disable"]:
                raise subprocess.CalledProcessError(1, list(argv))
            super().run(argv)

    recorder = Stubborn(system, fail_at=None)
    # fail the first start: everything before it must be undone, and disable refuses
    original = recorder.run

    def run(argv: Sequence[str]) -> None:
        if argv[:2] == ["systemctl", "start"]:
            raise subprocess.CalledProcessError(1, list(argv))
        original(argv)

    setup = system.parent / "fat/huxleyd-setup.toml"
    setup.write_text(SETUP)
    argv = [str(setup), "--root", str(system), "--share-hw", str(REPO / "hw"), "--no-reboot"]
    assert main(argv, run=run) == 1
    error = (setup.parent / "huxleyd-setup.error.txt").read_text()
    assert "could NOT be undone" in error and "NOT undone: CalledProcessError" in error
    assert "nothing was changed" not in error


def test_a_key_in_the_wrong_field_is_never_echoed(
    system: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for text in (
        f'[device]\nhostname = "{KEY}"\n',
        f'[device]\nboard = "{KEY}"\n',
        f'[device]\ntimezone = "{KEY}"\n',
        f'[provider]\nkind = "{KEY}"\n',
        f'[wifi]\nssid = "home"\ncountry = "{KEY}"\n',
        f'[ssh]\nauthorized_keys = ["{KEY}"]\n',
    ):
        code, setup = run_main(system, System(system), text)
        assert code == 1
        error = (setup.parent / "huxleyd-setup.error.txt").read_text()
        report = (system / FAILURE_REPORT).read_text()
        logged = capsys.readouterr()
        assert KEY not in error + report + logged.out + logged.err, text
        assert KEY[:12] not in error + report + logged.out + logged.err, text


def test_transaction_restores_modes_links_and_absent_files(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/secret").write_text("old")
    (tmp_path / "etc/secret").chmod(0o600)
    (tmp_path / "etc/link").symlink_to("/somewhere")
    before = snapshot(tmp_path)
    tx = Transaction(tmp_path, lambda argv: None)
    tx.write("etc/secret", "new", 0o644)
    tx.write("etc/secret", "newer", 0o644)  # the oldest state is the one restored
    tx.write("etc/link", "now a file")
    tx.symlink("etc/new/deep/link", "/x")
    tx.unlink("etc/secret")
    assert tx.rollback() == []
    assert snapshot(tmp_path) == before
