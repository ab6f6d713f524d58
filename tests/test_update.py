"""``huxleyctl update``: a new release switched to as a whole (daemon, CLI on the
PATH, the reboot timer's command, first boot, the unit files) through one link,
kept only if it stays healthy for the health window, the previous one back by
itself otherwise.

The device's tree is real, under a temporary root: ``scripts/install.sh``
lays out the image's release (``HUXLEYD_RELEASE``) with a stand-in Python
(no pip run: the layout is what is tested), the unit and the image's timer
and first-boot units are the repository's own files, and every path they
name is resolved link by link inside that root. The bundle is a real tar
file. The commands (venv, pip, systemctl) go to :class:`Device`, which acts
as systemd does for this Type=notify unit on an injected clock: it reads the
unit files (through their links) at boot and at ``daemon-reload`` only, so a
restart without a reload runs the unit it read before; ``restart``
runs the release ``current`` names and fails when it exits before READY;
after READY it behaves as the release's BEHAVIOUR file says (crash or
watchdog timeout N s after READY: systemd restarts it, a new pid, NRestarts
+1). The image's boot test runs the real thing on a booted image."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import pytest

import huxleyd
from huxleyd.control.cli import main as huxleyctl
from huxleyd.update import (
    HEALTH_WINDOW_S,
    BundleError,
    Health,
    Layout,
    UpdateFailed,
    current_release,
    read_state,
    read_version,
    rollback_note,
    running_release,
    update,
    watch_health,
)
from huxleyd.update.units import INSTALLED_UNITS, link_units

REPO = Path(__file__).resolve().parents[1]
UNITS = REPO / "image/rootfs/etc/systemd/system"
IMAGE_RELEASE = "0.1.0"
RELEASE_UNITS = ("huxleyd.service", "huxleyd-skillhost.socket", "huxleyd-skillhost@.service")


def unit_text(name: str, version: str | None) -> str:
    """A release's copy of a unit: the repository's, its Description= line
    marked with ``version`` (None: as the repository has it, the image's)."""
    shipped = REPO / "systemd" / name
    text = shipped.read_text() if shipped.exists() else "[Unit]\nDescription=more\n"
    return (
        text
        if version is None
        else text.replace("\nDescription=", f"\nDescription=[{version}] ", 1)
    )


def make_bundle(
    path: Path,
    version: str,
    behaviour: str = "ok",
    *,
    extra: str = "",
    units: Sequence[str] = RELEASE_UNITS,
) -> Path:
    with tarfile.open(path, "w") as tar:
        files = {
            **{f"src/systemd/{name}": unit_text(name, version) for name in units},
            "src/systemd/huxleyd.sysusers": "u huxley -\n",  # not a unit: not linked
            "huxleyd-update.toml": f'version = "{version}"\n',
            "src/pyproject.toml": "[project]\nname = 'huxleyd'\n",
            "src/sdk/pyproject.toml": "[project]\nname = 'huxley-sdk'\n",
            "src/BEHAVIOUR": behaviour,
            "src/hw/gpio-basic.toml": f"# profile of {version}\n",
            "src/sounds/ready.wav": f"RIFF {version}",
            "src/docs/image.md": f"# guide of {version}\n",
            "wheels/numpy-2.0-cp313-cp313-linux_aarch64.whl": "wheel",
        }
        if extra:
            files[extra] = "x"
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def resolve(root: Path, path: str) -> str:
    """``path`` on the device: every link followed inside ``root`` (absolute
    targets from the device's /), as the kernel would there."""
    todo = list(PurePosixPath(path).parts[1:])
    done = PurePosixPath("/")
    for _ in range(200):
        if not todo:
            return str(done)
        part = todo.pop(0)
        if part == "..":
            done = done.parent
            continue
        here = root / (done / part).relative_to("/")
        if here.is_symlink():
            target = PurePosixPath(os.readlink(here))
            if target.is_absolute():
                done, todo = PurePosixPath("/"), [*target.parts[1:], *todo]
            else:
                todo = [*target.parts, *todo]
        else:
            done = done / part
    raise AssertionError(f"{path}: a link loop")


def exec_path(unit: Path | str) -> str:
    """The program of a unit's (last) ExecStart=, without prefixes like '-'
    (``unit``: its file, or its text)."""
    text = unit.read_text() if isinstance(unit, Path) else unit
    lines = [ln for ln in text.splitlines() if ln.startswith("ExecStart=")]
    return lines[-1].split("=", 1)[1].lstrip("-@:+!").split()[0]


FAKE_PYTHON = """#!/bin/sh
# install.sh's Python, for the layout alone: a venv is its bin/ with the
# scripts the units name; pip does nothing.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    cp "$0" "$3/bin/python"
    for s in huxleyd huxleyctl; do printf '#!%s/bin/python\\n' "$3" > "$3/bin/$s"; done
    echo ok > "$3/BEHAVIOUR"
fi
exit 0
"""


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's /opt/huxleyd, unit and CLI link, made by the real install.sh."""
    root = tmp_path_factory.mktemp("image-root")
    python = tmp_path_factory.mktemp("bin") / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    result = subprocess.run(
        ["sh", str(REPO / "scripts/install.sh"), str(root), "/opt/huxleyd"],
        env={**os.environ, "PYTHON": str(python), "HUXLEYD_RELEASE": IMAGE_RELEASE},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture
def layout(image_tree: Path, tmp_path: Path) -> Layout:
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", str(image_tree), str(root)], check=True)
    return Layout(root=root)


class Device:
    """huxleyd.service on the device, as systemd runs it, on an injected clock."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.commands: list[list[str]] = []
        self.now = 0.0
        self.pid = 1000
        self.restarts = 0
        self.ready_at = 0.0
        self.loaded: dict[str, tuple[str, str]] = {}
        self.daemon_reload()  # booted: systemd read the units
        self.started: list[tuple[str, str]] = []
        """Each restart's huxleyd.service, as systemd had loaded it."""
        self.running: str | None = self.release_named_by_unit()
        self.check_config_ok = True
        self.note_at_start: str | None = None

    def daemon_reload(self) -> None:
        """What systemd reads, and keeps until the next reload: each unit of its
        search path (/etc/systemd/system first), the file it resolved to and
        its text. A dangling link hides the name all the same (not found)."""
        self.loaded = {}
        for where in (self.layout.admin_unit_dir, self.layout.unit_dir):
            for unit in sorted((self.layout.root / where).glob("*.*")):
                if unit.is_dir() or unit.name in self.loaded:
                    continue
                path = resolve(self.layout.root, f"/{where}/{unit.name}")
                file = self.layout.root / path.lstrip("/")
                self.loaded[unit.name] = (path, file.read_text() if file.is_file() else "")

    # -- the commands update runs
    def run(self, argv: Sequence[str]) -> None:
        argv = list(argv)
        self.commands.append(argv)
        match argv:
            case [_, "-m", "venv", venv]:
                bin_dir = Path(venv) / "bin"
                bin_dir.mkdir(parents=True)
                for script in ("python", "huxleyd", "huxleyctl"):
                    (bin_dir / script).write_text("#!/bin/sh\n")
            case [python, "-m", "pip", "install", *args]:
                home = Path(python).parents[1]
                source = Path(args[-1].removesuffix("[journal]"))
                if (source / "BEHAVIOUR").exists():  # huxleyd itself, not the SDK
                    (home / "BEHAVIOUR").write_text((source / "BEHAVIOUR").read_text())
            case [huxleyd, "--check-config", *_]:
                if not self.check_config_ok:
                    raise subprocess.CalledProcessError(78, argv)
                assert Path(huxleyd).is_file()
            case ["systemctl", "daemon-reload"]:
                self.daemon_reload()
            case ["systemctl", "restart", "huxleyd.service"]:
                self.running = None
                self.started.append(self.loaded["huxleyd.service"])
                release = self.release_named_by_unit()
                assert release is not None, "the unit names no release"
                if self.behaviour(release) == "no-ready":
                    raise subprocess.CalledProcessError(1, argv)  # exited before READY
                self.running, self.pid, self.ready_at = release, self.pid + 1, self.now
                # What the starting daemon reads (huxleyd.app.runtime): a rollback
                # must be on record before the previous release starts again.
                self.note_at_start = rollback_note(read_state(self.layout))
                self.restarts = 0  # an explicit restart starts the count anew
            case _:
                raise AssertionError(f"unexpected command {argv}")

    def release_named_by_unit(self) -> str | None:
        """The release the loaded unit's ExecStart resolves to (None: a plain venv)."""
        _, text = self.loaded["huxleyd.service"]
        venv_bin = PurePosixPath(resolve(self.layout.root, exec_path(text))).parent
        if venv_bin.parent.parent.parent.name != "releases":
            return None
        return venv_bin.parent.parent.name

    def behaviour(self, release: str) -> str:
        return (self.layout.release(release) / "venv/BEHAVIOUR").read_text()

    # -- what the health window looks at
    def probe(self) -> Health:
        assert self.running is not None
        kind, _, after = self.behaviour(self.running).partition("-after:")
        since = self.now - self.ready_at
        if kind in ("crash", "watchdog") and since >= float(after):
            # systemd restarted it (RestartSec=10): a new process, NRestarts+1
            result = "exit-code" if kind == "crash" else "watchdog"
            return Health(True, self.pid + 1, self.restarts + 1, result, "connecting")
        if kind == "exit" and since >= float(after):  # exit 0: not restarted
            return Health(False, 0, self.restarts, "success")
        if kind == "silent":
            return Health(True, self.pid, self.restarts, "success", "connecting", "")
        if kind == "offline":
            return Health(True, self.pid, self.restarts, "success", "offline", "no route")
        return Health(True, self.pid, self.restarts, "success", "connected")

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds


def do_update(device: Device, bundle: Path) -> str:
    return update(
        bundle,
        layout=device.layout,
        run=device.run,
        probe=device.probe,
        clock=device.clock,
        sleep=device.sleep,
    )


def on_device(layout: Layout, path: str) -> Path:
    """The file ``path`` names on the device, links followed there."""
    return layout.root / resolve(layout.root, path).lstrip("/")


def entry_points(layout: Layout) -> dict[str, str]:
    """What each thing that runs our code runs, resolved on the device."""
    root = layout.root
    return {
        "daemon": resolve(
            root, exec_path(on_device(layout, "/lib/systemd/system/huxleyd.service"))
        ),
        "skill host": resolve(
            root, exec_path(on_device(layout, "/lib/systemd/system/huxleyd-skillhost@.service"))
        ),
        **{name: resolve(root, f"/lib/systemd/system/{name}") for name in RELEASE_UNITS},
        "cli": resolve(root, "/usr/local/bin/huxleyctl"),
        "reboot timer": resolve(root, exec_path(UNITS / "huxleyd-reboot.service")),
        "first boot": resolve(root, exec_path(UNITS / "huxleyd-firstboot.service")),
        "share": resolve(root, "/opt/huxleyd/share/hw/gpio-basic.toml"),
    }


def on_release(layout: Layout, version: str) -> dict[str, str]:
    base = f"/opt/huxleyd/releases/{version}"
    return {
        "daemon": f"{base}/venv/bin/huxleyd",
        "skill host": f"{base}/venv/bin/python",
        **{name: f"{base}/share/systemd/{name}" for name in RELEASE_UNITS},
        "cli": f"{base}/venv/bin/huxleyctl",
        "reboot timer": f"{base}/venv/bin/huxleyctl",
        "first boot": f"{base}/venv/bin/python",
        "share": f"{base}/share/hw/gpio-basic.toml",
    }


def units_of(device: Device, version: str, marked: str | None) -> None:
    """The units in systemd's search path are ``version``'s copies (their text
    marked ``marked``), systemd read those, and started the daemon's."""
    base = f"/opt/huxleyd/releases/{version}/share/systemd"
    for name in RELEASE_UNITS:
        text = unit_text(name, marked)
        assert on_device(device.layout, f"/lib/systemd/system/{name}").read_text() == text
        assert device.loaded[name] == (f"{base}/{name}", text)
    assert device.started[-1] == device.loaded["huxleyd.service"]


def reloaded_before_each_restart(commands: list[list[str]]) -> bool:
    restarts = [i for i, argv in enumerate(commands) if argv[:2] == ["systemctl", "restart"]]
    return bool(restarts) and all(
        commands[i - 1] == ["systemctl", "daemon-reload"] for i in restarts
    )


def test_the_image_layout_runs_everything_from_one_release(layout: Layout) -> None:
    assert current_release(layout) == IMAGE_RELEASE
    assert entry_points(layout) == on_release(layout, IMAGE_RELEASE)
    # The units are the release's, named through share (-> current/share).
    for name in RELEASE_UNITS:
        link = layout.root / "lib/systemd/system" / name
        assert os.readlink(link) == f"/opt/huxleyd/share/systemd/{name}"
        assert on_device(layout, f"/lib/systemd/system/{name}").read_text() == unit_text(name, None)
    # Users, directories and device owners are the system's, not a release's.
    for kept in ("usr/lib/sysusers.d/huxleyd.conf", "usr/lib/tmpfiles.d/huxleyd.conf"):
        assert not (layout.root / kept).is_symlink() and (layout.root / kept).is_file()
    # The reboot timer runs the service whose command was resolved above.
    assert "Unit=" not in (UNITS / "huxleyd-reboot.timer").read_text()


def test_update_then_rollback_moves_the_daemon_cli_timer_and_first_boot_together(
    layout: Layout, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    device = Device(layout)
    assert do_update(device, make_bundle(tmp_path / "a.tar", "0.1.1")) == "0.1.1"
    assert entry_points(layout) == on_release(layout, "0.1.1")
    units_of(device, "0.1.1", marked="0.1.1")
    assert device.running == "0.1.1"
    assert running_release(str(layout.root) + resolve(layout.root, "/opt/huxleyd/venv")) == "0.1.1"
    assert (layout.release("0.1.1") / "share/image.md").read_text() == "# guide of 0.1.1\n"
    assert device.now >= HEALTH_WINDOW_S  # it was watched the whole window

    # 0.1.2 reaches READY, then crashes 44 s later: all of it goes back to 0.1.1.
    crashing = make_bundle(tmp_path / "b.tar", "0.1.2", "crash-after:44")
    with pytest.raises(UpdateFailed, match=r"0\.1\.2 was rolled back: systemd restarted it"):
        do_update(device, crashing)
    assert entry_points(layout) == on_release(layout, "0.1.1")
    units_of(device, "0.1.1", marked="0.1.1")
    # 0.1.2 was started from its own unit, then 0.1.1 from its own again.
    assert device.started[-2][1] == unit_text("huxleyd.service", "0.1.2")
    assert reloaded_before_each_restart(device.commands)
    assert device.running == "0.1.1"
    assert not layout.release("0.1.2").exists()
    assert "update_rolled_back" in caplog.text
    note = rollback_note(read_state(layout))
    assert note is not None and "0.1.2" in note and "44 s after READY" in note
    assert device.note_at_start == note  # the restarted 0.1.1 read it at its start

    # Not tried again: the same version is refused, nothing moves.
    with pytest.raises(BundleError, match="not tried again"):
        do_update(device, crashing)
    assert entry_points(layout) == on_release(layout, "0.1.1")

    # A newer one is: it runs, and the rollback note is gone.
    do_update(device, make_bundle(tmp_path / "c.tar", "0.1.3"))
    assert entry_points(layout) == on_release(layout, "0.1.3")
    assert rollback_note(read_state(layout)) is None
    assert sorted(p.name for p in layout.releases.iterdir()) == ["0.1.1", "0.1.3"]


@pytest.mark.parametrize(
    ("behaviour", "words"),
    [
        ("crash-after:30", "systemd restarted it 1 time (exit-code) 30 s after READY"),
        ("watchdog-after:40", "systemd restarted it 1 time (watchdog) 40 s after READY"),
        ("exit-after:100", "it stopped (success) 100 s after READY"),
        ("silent", "still connecting to its provider and had not said why"),
        ("no-ready", "it did not reach READY"),
    ],
)
def test_an_unhealthy_release_is_rolled_back_to_the_image(
    layout: Layout, tmp_path: Path, behaviour: str, words: str
) -> None:
    device = Device(layout)
    with pytest.raises(UpdateFailed, match="runs again") as failed:
        do_update(device, make_bundle(tmp_path / "bad.tar", "0.2.0", behaviour))
    assert words in str(failed.value)
    assert device.running == IMAGE_RELEASE
    assert entry_points(layout) == on_release(layout, IMAGE_RELEASE)
    units_of(device, IMAGE_RELEASE, marked=None)
    assert reloaded_before_each_restart(device.commands)
    assert read_state(layout)["refused"] == ["0.2.0"]


def test_kept_when_healthy_for_the_window_or_offline_with_a_reason(
    layout: Layout, tmp_path: Path
) -> None:
    device = Device(layout)
    # Says why it is not connected (offline): healthy.
    do_update(device, make_bundle(tmp_path / "a.tar", "0.3.0", "offline"))
    # A crash after the window is not the update's to judge.
    do_update(
        device, make_bundle(tmp_path / "b.tar", "0.3.1", f"crash-after:{HEALTH_WINDOW_S + 30}")
    )
    assert entry_points(layout) == on_release(layout, "0.3.1")


def test_a_release_that_rejects_the_config_is_never_switched_to(
    layout: Layout, tmp_path: Path
) -> None:
    device = Device(layout)
    device.check_config_ok = False
    with pytest.raises(UpdateFailed, match="nothing was switched"):
        do_update(device, make_bundle(tmp_path / "a.tar", "0.2"))
    assert ["systemctl", "restart", "huxleyd.service"] not in device.commands
    assert not layout.release("0.2").exists()
    assert current_release(layout) == IMAGE_RELEASE


def test_updates_never_use_the_network_and_keep_two_releases(
    layout: Layout, tmp_path: Path
) -> None:
    device = Device(layout)
    for i, version in enumerate(("0.1.1", "0.1.2", "0.1.3")):
        do_update(device, make_bundle(tmp_path / f"{i}.tar", version))
    assert sorted(p.name for p in layout.releases.iterdir()) == ["0.1.2", "0.1.3"]
    assert not (layout.release("0.1.3") / "bundle").exists()
    pips = [c for c in device.commands if c[1:4] == ["-m", "pip", "install"]]
    assert pips and all("--no-index" in c for c in pips)


def test_a_plain_install_becomes_a_release_on_the_first_update(tmp_path: Path) -> None:
    """A device of an older image (a real /opt/huxleyd/venv, the old drop-in)."""
    layout = Layout(root=tmp_path / "root")
    venv = layout.home / "venv"
    (venv / "bin").mkdir(parents=True)
    for script in ("python", "huxleyd", "huxleyctl"):
        (venv / "bin" / script).write_text("#!/opt/huxleyd/venv/bin/python\n")
    (venv / "BEHAVIOUR").write_text("ok")
    (venv / "lib/python3.13/site-packages/huxleyd-0.0.9.dist-info").mkdir(parents=True)
    (layout.home / "share/hw").mkdir(parents=True)
    (layout.home / "share/hw/gpio-basic.toml").write_text("old")
    units = layout.root / "lib/systemd/system"
    units.mkdir(parents=True)
    for name in RELEASE_UNITS:  # files, as a plain install.sh leaves them
        (units / name).write_text(unit_text(name, None))
    cli = layout.root / "usr/local/bin/huxleyctl"
    cli.parent.mkdir(parents=True)
    cli.symlink_to("/opt/huxleyd/venv/bin/huxleyctl")
    dropin = layout.root / layout.legacy_dropin
    dropin.parent.mkdir(parents=True)
    dropin.write_text("[Service]\nExecStart=\nExecStart=/opt/huxleyd/venv/bin/huxleyd\n")
    device = Device(layout)
    with pytest.raises(UpdateFailed):
        do_update(device, make_bundle(tmp_path / "bad.tar", "0.2.0", "crash-after:5"))
    assert entry_points(layout) == on_release(layout, "0.0.9")
    units_of(device, "0.0.9", marked=None)  # its units became its release's
    assert not dropin.exists()
    do_update(device, make_bundle(tmp_path / "good.tar", "0.2.1"))
    assert entry_points(layout) == on_release(layout, "0.2.1")
    units_of(device, "0.2.1", marked="0.2.1")


def test_the_scripts_and_the_update_know_the_same_units() -> None:
    """What install.sh installs, uninstall.sh removes, and an adopted plain
    install brings into its release."""
    for script in ("install.sh", "uninstall.sh"):
        lines = (REPO / "scripts" / script).read_text().splitlines()
        (units,) = [ln for ln in lines if ln.startswith("UNITS=")]
        assert tuple(units.split("=", 1)[1].strip('"').split()) == INSTALLED_UNITS == RELEASE_UNITS


def test_a_release_brings_its_own_units_and_takes_them_back(layout: Layout, tmp_path: Path) -> None:
    """A unit one release adds is there while it runs, and gone when another
    one without it runs (a rollback included)."""
    device = Device(layout)
    timer = "huxleyd-more.timer"
    link = layout.root / "lib/systemd/system" / timer
    do_update(device, make_bundle(tmp_path / "a.tar", "0.4.0", units=[*RELEASE_UNITS, timer]))
    assert device.loaded[timer] == (f"/opt/huxleyd/releases/0.4.0/share/systemd/{timer}",
                                    unit_text(timer, "0.4.0"))  # fmt: skip
    with pytest.raises(UpdateFailed):
        do_update(device, make_bundle(tmp_path / "b.tar", "0.4.1", "crash-after:9"))
    assert device.loaded[timer][0].startswith("/opt/huxleyd/releases/0.4.0/")
    do_update(device, make_bundle(tmp_path / "c.tar", "0.4.2"))
    assert not link.is_symlink() and timer not in device.loaded
    units_of(device, "0.4.2", marked="0.4.2")
    assert not (layout.root / "lib/systemd/system/huxleyd.sysusers").exists()


def test_a_bundle_without_its_units_is_never_switched_to(layout: Layout, tmp_path: Path) -> None:
    device = Device(layout)
    with pytest.raises(
        UpdateFailed, match=r"no src/systemd/huxleyd\.service.*nothing was switched"
    ):
        do_update(device, make_bundle(tmp_path / "a.tar", "0.5.0", units=[]))
    assert current_release(layout) == IMAGE_RELEASE
    assert not layout.release("0.5.0").exists()


def enable(root: Path) -> None:
    """``systemctl enable huxleyd huxleyd-skillhost.socket`` in ``root``, as the
    image does; by hand where there is no systemctl, making what systemd 252
    makes for a linked unit: links to the file it resolved, in one release."""
    systemctl = shutil.which("systemctl")
    if systemctl is not None:
        subprocess.run(
            [systemctl, f"--root={root}", "enable", "huxleyd.service", "huxleyd-skillhost.socket"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        return
    etc = root / "etc/systemd/system"
    for name, target in (
        ("huxleyd.service", "multi-user"),
        ("huxleyd-skillhost.socket", "sockets"),
    ):
        (etc / f"{target}.target.wants").mkdir(parents=True, exist_ok=True)
        resolved = resolve(root, f"/lib/systemd/system/{name}")
        (etc / f"{target}.target.wants" / name).symlink_to(resolved)
        (etc / name).symlink_to(resolved)


def test_enabled_units_follow_the_release_too(layout: Layout, tmp_path: Path) -> None:
    """``systemctl enable`` of a linked unit names the release it resolved
    (pinned); the switch makes those links name the fixed link again."""
    enable(layout.root)
    etc = layout.root / "etc/systemd/system"
    wants = etc / "multi-user.target.wants/huxleyd.service"
    assert resolve(layout.root, str(PurePosixPath("/") / wants.relative_to(layout.root))) == (
        f"/opt/huxleyd/releases/{IMAGE_RELEASE}/share/systemd/huxleyd.service"
    )
    device = Device(layout)
    do_update(device, make_bundle(tmp_path / "a.tar", "0.1.1"))
    units_of(device, "0.1.1", marked="0.1.1")
    assert not (etc / "huxleyd.service").is_symlink()  # /lib/systemd/system's is the unit
    assert os.readlink(wants) == "/lib/systemd/system/huxleyd.service"
    socket = etc / "sockets.target.wants/huxleyd-skillhost.socket"
    assert os.readlink(socket) == "/lib/systemd/system/huxleyd-skillhost.socket"
    with pytest.raises(UpdateFailed):
        do_update(device, make_bundle(tmp_path / "b.tar", "0.1.2", "no-ready"))
    units_of(device, "0.1.1", marked="0.1.1")
    assert reloaded_before_each_restart(device.commands)
    if shutil.which("systemctl"):
        state = subprocess.run(
            ["systemctl", f"--root={layout.root}", "is-enabled", "huxleyd.service"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert state.stdout.strip() == "enabled"


def test_link_units_on_a_bare_root_and_a_requires_link(tmp_path: Path) -> None:
    """The links are made where no unit folder exists yet (a staged root), and
    a ``.requires`` link an admin's ``systemctl add-requires`` pinned to one
    release names the fixed link again, as ``.wants`` links do."""
    layout = Layout(root=tmp_path)
    shipped = layout.release("0.2") / "share/systemd"
    shipped.mkdir(parents=True)
    (shipped / "huxleyd.service").write_text("[Unit]\n")
    layout.current.symlink_to("releases/0.2")
    requires = tmp_path / "etc/systemd/system/multi-user.target.requires"
    requires.mkdir(parents=True)
    pinned = "/opt/huxleyd/releases/0.1/share/systemd/huxleyd.service"
    (requires / "huxleyd.service").symlink_to(pinned)
    assert link_units(layout) == ["huxleyd.service"]
    assert os.readlink(tmp_path / "lib/systemd/system/huxleyd.service") == (
        "/opt/huxleyd/share/systemd/huxleyd.service"
    )
    assert os.readlink(requires / "huxleyd.service") == "/lib/systemd/system/huxleyd.service"


def test_install_sh_unpins_what_it_enabled_as_the_update_does(layout: Layout) -> None:
    """install.sh's unpin_units, run after its systemctl enable on a running
    system (not reachable in a DESTDIR install: its function alone)."""
    enable(layout.root)
    script = (REPO / "scripts/install.sh").read_text()
    function = re.search(r"^unpin_units\(\) \{\n.*?^\}\n", script, re.M | re.S)
    assert function is not None
    subprocess.run(
        ["sh", "-euc", function.group(0) + "unpin_units"],
        env={**os.environ, "DESTDIR": str(layout.root), "PREFIX": "/opt/huxleyd",
             "UNITS": " ".join(RELEASE_UNITS)},
        check=True, timeout=60,
    )  # fmt: skip
    etc = layout.root / "etc/systemd/system"
    assert not (etc / "huxleyd.service").is_symlink()
    assert os.readlink(etc / "multi-user.target.wants/huxleyd.service") == (
        "/lib/systemd/system/huxleyd.service"
    )
    assert os.readlink(etc / "sockets.target.wants/huxleyd-skillhost.socket") == (
        "/lib/systemd/system/huxleyd-skillhost.socket"
    )


def test_a_bundle_cannot_write_outside_its_release(layout: Layout, tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "evil.tar", "0.3", extra="../../../../etc/evil")
    with pytest.raises(UpdateFailed):
        do_update(Device(layout), bundle)
    assert not any(p.name == "evil" for p in tmp_path.rglob("evil"))


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"not a tar", "not a readable bundle"),
        (None, "no huxleyd-update.toml"),
    ],
)
def test_not_a_bundle(tmp_path: Path, content: bytes | None, words: str) -> None:
    path = tmp_path / "x.tar"
    if content is None:
        with tarfile.open(path, "w"):
            pass
    else:
        path.write_bytes(content)
    with pytest.raises(BundleError, match=words):
        read_version(path)


def test_watch_health_looks_for_the_whole_window() -> None:
    now = [0.0]
    looks: list[float] = []

    def probe() -> Health:
        looks.append(now[0])
        return Health(True, 7, 0, provider_state="connected")

    def sleep(s: float) -> None:
        now[0] += s

    assert watch_health(probe, window_s=10, poll_s=3, clock=lambda: now[0], sleep=sleep) is None
    assert looks == [0, 3, 6, 9, 10]


def test_watch_health_needs_an_answer_to_status() -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    why = watch_health(
        lambda: Health(True, 7, 0), window_s=6, poll_s=2, clock=lambda: now[0], sleep=sleep
    )
    assert why == "it did not answer status within 6 s of READY"


def test_huxleyctl_update_says_what_happened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert huxleyctl(["update", str(tmp_path / "missing.tar")]) == 1
    assert "not a readable bundle" in capsys.readouterr().err


def test_running_release_is_the_releases_directory(tmp_path: Path) -> None:
    real = tmp_path / "opt/huxleyd/releases/1.2.3/venv"
    real.mkdir(parents=True)
    assert running_release(str(real)) == "1.2.3"
    link = tmp_path / "opt/huxleyd/venv"
    link.symlink_to("releases/1.2.3/venv")
    assert running_release(str(link)) == "1.2.3"  # through the links, as the units name it
    assert running_release(str(tmp_path)) is None  # a plain venv, a checkout


def test_huxleyctl_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        huxleyctl(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"huxleyctl {huxleyd.__version__} (")


def test_uninstall_takes_every_release_and_link(layout: Layout, tmp_path: Path) -> None:
    enable(layout.root)
    do_update(Device(layout), make_bundle(tmp_path / "a.tar", "0.1.1"))
    subprocess.run(
        ["sh", str(REPO / "scripts/uninstall.sh"), str(layout.root), "/opt/huxleyd"],
        capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    assert not layout.home.exists()
    assert not (layout.root / "usr/local/bin/huxleyctl").is_symlink()
    left = [
        str(p.relative_to(layout.root))
        for p in (layout.root / "lib/systemd/system", layout.root / "etc/systemd/system")
        for p in p.rglob("huxleyd*")
        if p.is_symlink() or p.is_file()
    ]
    assert left == []
