"""``huxleyctl update``: a new version from a bundle file, switched to only if
it reaches READY, the previous one back by itself otherwise.

The bundle is a real tar file and every file change is real (under a
temporary root); the commands (venv, pip, systemctl) go to a stand-in that
acts as systemd does for a Type=notify unit: ``restart`` runs whatever the
unit's drop-in names and fails when that daemon exits before READY. The
image's boot test runs the real thing."""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from huxleyd.control.cli import main as huxleyctl
from huxleyd.update import BundleError, Layout, UpdateFailed, read_version, update


def make_bundle(path: Path, version: str, *, starts: bool = True, extra: str = "") -> Path:
    with tarfile.open(path, "w") as tar:
        files = {
            "huxleyd-update.toml": f'version = "{version}"\n',
            "src/pyproject.toml": "[project]\nname = 'huxleyd'\n",
            "src/sdk/pyproject.toml": "[project]\nname = 'huxley-sdk'\n",
            "src/STARTS": "yes" if starts else "no",
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


class Systemd:
    """Commands on the device, as they behave for huxleyd.service."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.commands: list[list[str]] = []
        self.loaded_execstart = "/opt/huxleyd/venv/bin/huxleyd"
        self.running: str | None = self.loaded_execstart
        self.check_config_ok = True

    def run(self, argv: Sequence[str]) -> None:
        argv = list(argv)
        self.commands.append(argv)
        match argv:
            case [_, "-m", "venv", venv]:
                (Path(venv) / "bin").mkdir(parents=True)
            case [python, "-m", "pip", "install", *args]:
                home = Path(python).parents[1]
                source = Path(args[-1].removesuffix("[journal]"))
                if (source / "STARTS").exists():  # huxleyd itself, not the SDK
                    (home / "STARTS").write_text((source / "STARTS").read_text())
            case [huxleyd, "--check-config", *_]:
                if not self.check_config_ok:
                    raise subprocess.CalledProcessError(78, argv)
                assert Path(huxleyd).parent.is_dir()
            case ["systemctl", "daemon-reload"]:
                dropin = self.layout.root / self.layout.dropin
                self.loaded_execstart = "/opt/huxleyd/venv/bin/huxleyd"
                if dropin.exists():
                    for line in dropin.read_text().splitlines():
                        if line.startswith("ExecStart=/"):
                            self.loaded_execstart = line.split("=", 1)[1].split()[0]
            case ["systemctl", "restart", "huxleyd.service"]:
                self.running = None
                marker = Path(self.loaded_execstart).parents[1] / "STARTS"
                if marker.exists() and marker.read_text() == "no":
                    raise subprocess.CalledProcessError(1, argv)  # exited before READY
                self.running = self.loaded_execstart
            case _:
                raise AssertionError(f"unexpected command {argv}")


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(root=tmp_path / "root")


def test_version_n_to_n_plus_1_then_n_plus_2_keeps_the_previous(
    layout: Layout, tmp_path: Path
) -> None:
    systemd = Systemd(layout)
    assert (
        update(make_bundle(tmp_path / "a.tar", "0.1.1"), layout=layout, run=systemd.run) == "0.1.1"
    )
    assert systemd.running == str(layout.release("0.1.1") / "venv/bin/huxleyd")
    assert (
        update(make_bundle(tmp_path / "b.tar", "0.1.2"), layout=layout, run=systemd.run) == "0.1.2"
    )
    assert systemd.running == str(layout.release("0.1.2") / "venv/bin/huxleyd")
    update(make_bundle(tmp_path / "c.tar", "0.1.3"), layout=layout, run=systemd.run)
    releases = sorted(p.name for p in (layout.root / layout.releases).iterdir())
    assert releases == ["0.1.2", "0.1.3"]  # the new one and the previous one
    assert not (layout.release("0.1.3") / "bundle").exists()
    pips = [c for c in systemd.commands if c[1:4] == ["-m", "pip", "install"]]
    assert all("--no-index" in c for c in pips)  # never the network


def test_a_version_that_does_not_reach_ready_is_rolled_back(
    layout: Layout, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    systemd = Systemd(layout)
    update(make_bundle(tmp_path / "good.tar", "0.1.1"), layout=layout, run=systemd.run)
    dropin = (layout.root / layout.dropin).read_text()
    with pytest.raises(UpdateFailed, match="the previous version runs again"):
        update(
            make_bundle(tmp_path / "bad.tar", "0.1.2", starts=False), layout=layout, run=systemd.run
        )
    assert (layout.root / layout.dropin).read_text() == dropin
    assert systemd.running == str(layout.release("0.1.1") / "venv/bin/huxleyd")
    assert not layout.release("0.1.2").exists()
    assert "update_rolled_back" in caplog.text


def test_the_first_update_that_fails_goes_back_to_the_images_venv(
    layout: Layout, tmp_path: Path
) -> None:
    systemd = Systemd(layout)
    with pytest.raises(UpdateFailed):
        update(
            make_bundle(tmp_path / "bad.tar", "0.2", starts=False), layout=layout, run=systemd.run
        )
    assert not (layout.root / layout.dropin).exists()
    assert systemd.running == "/opt/huxleyd/venv/bin/huxleyd"


def test_a_release_that_rejects_the_config_is_never_switched_to(
    layout: Layout, tmp_path: Path
) -> None:
    systemd = Systemd(layout)
    systemd.check_config_ok = False
    with pytest.raises(UpdateFailed, match="nothing was switched"):
        update(make_bundle(tmp_path / "a.tar", "0.2"), layout=layout, run=systemd.run)
    assert ["systemctl", "restart", "huxleyd.service"] not in systemd.commands
    assert not layout.release("0.2").exists()


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


def test_a_bundle_cannot_write_outside_its_release(layout: Layout, tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "evil.tar", "0.3", extra="../../../../etc/evil")
    with pytest.raises(UpdateFailed):
        update(bundle, layout=layout, run=Systemd(layout).run)
    assert not any(p.name == "evil" for p in tmp_path.rglob("evil"))


def test_huxleyctl_update_says_what_happened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert huxleyctl(["update", str(tmp_path / "missing.tar")]) == 1
    assert "not a readable bundle" in capsys.readouterr().err
