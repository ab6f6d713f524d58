"""scripts/install.sh into a DESTDIR: the tree it builds, that an edited
config survives a second install, and that uninstall.sh takes back only
what is ours.

The script is run directly rather than through ``make install``, whose
``setup`` prerequisite would reinstall the development venv under the other
tests' feet. ``HUXLEYD_PIP_ARGS=--no-deps`` installs the package itself for
real (built from a copy of the tree, into a fresh venv) but not numpy,
scipy, openai and PyAudio again: that would take minutes and the network.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "/opt/hx"


def _run(script: str, destdir: Path, **env: str) -> str:
    result = subprocess.run(
        ["sh", str(ROOT / "scripts" / script), str(destdir), PREFIX],
        env={**os.environ, "PYTHON": sys.executable, "HUXLEYD_PIP_ARGS": "--no-deps", **env},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=destdir,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


BOARD = "respeaker-2mic"


def _configured(board: str | None) -> str:
    """The shipped huxleyd.toml as install.sh writes it for PREFIX and ``board``."""
    text = (ROOT / "config/huxleyd.toml").read_text().replace("/opt/huxleyd", PREFIX)
    if board:
        text = text.replace('board = "gpio-basic"', f'board = "{board}"')
    return text


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    destdir = tmp_path_factory.mktemp("destdir")
    return destdir, _run("install.sh", destdir, BOARD=BOARD)


def test_systemd_files(installed: tuple[Path, str]) -> None:
    destdir, _ = installed
    unit = (destdir / "lib/systemd/system/huxleyd.service").read_text()
    assert f"ExecStart={PREFIX}/venv/bin/huxleyd --config /etc/huxleyd/huxleyd.toml" in unit
    assert "/opt/huxleyd" not in unit  # PREFIX applied everywhere
    sysusers = destdir / "usr/lib/sysusers.d/huxleyd.conf"
    tmpfiles = destdir / "usr/lib/tmpfiles.d/huxleyd.conf"
    assert sysusers.read_text() == (ROOT / "systemd/huxleyd.sysusers").read_text()
    assert tmpfiles.read_text() == (ROOT / "systemd/huxleyd.tmpfiles").read_text()


def test_udev_rules_give_the_groups_their_devices(installed: tuple[Path, str]) -> None:
    """Debian leaves /dev/gpiochip* and /dev/spidev* root-only: the rules fix that."""
    destdir, _ = installed
    rules = (destdir / "usr/lib/udev/rules.d/60-huxleyd.rules").read_text()
    lines = [line for line in rules.splitlines() if line and not line.startswith("#")]
    assert 'SUBSYSTEM=="gpio", KERNEL=="gpiochip[0-9]*", GROUP="gpio", MODE="0660"' in lines
    assert 'SUBSYSTEM=="spidev", KERNEL=="spidev[0-9]*", GROUP="spi", MODE="0660"' in lines
    # The groups they name are the ones sysusers creates and the unit joins.
    sysusers = (ROOT / "systemd/huxleyd.sysusers").read_text()
    unit = (ROOT / "systemd/huxleyd.service").read_text()
    for group in ("gpio", "spi"):
        assert f"g {group} -" in sysusers and f"m huxley {group}" in sysusers
        assert group in unit.split("SupplementaryGroups=")[1].split("\n")[0]


def test_board_profiles_and_asound_conf(installed: tuple[Path, str]) -> None:
    destdir, _ = installed
    shipped = sorted(p.name for p in (ROOT / "hw").iterdir() if p.is_file())
    assert sorted(p.name for p in (destdir / f"{PREFIX.lstrip('/')}/share/hw").iterdir()) == shipped
    assert (destdir / "etc/asound.conf").read_text() == (
        ROOT / "hw/respeaker-2mic.asound.conf"
    ).read_text()
    assert (destdir / f"{PREFIX.lstrip('/')}/share/sounds").is_dir()


def test_default_config_and_key(installed: tuple[Path, str]) -> None:
    destdir, _ = installed
    etc = destdir / "etc/huxleyd"
    for src in sorted((ROOT / "config/personas").glob("*.toml")):
        dst = etc / src.relative_to(ROOT / "config")
        assert dst.read_bytes() == src.read_bytes(), dst
    assert (etc / "huxleyd.toml").read_text() == _configured(BOARD)
    key = etc / "openai.key"
    assert key.read_bytes() == b""
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_the_installed_config_names_the_board_and_the_prefix(
    installed: tuple[Path, str],
) -> None:
    # before test_edited_config_survives_a_second_install edits the file
    destdir, _ = installed
    text = (destdir / "etc/huxleyd/huxleyd.toml").read_text()
    config = tomllib.loads(text)
    assert config["hardware"]["board"] == BOARD
    assert config["hardware"]["boards_dir"] == f"{PREFIX}/share/hw"
    assert config["daemon"]["sounds_dir"] == f"{PREFIX}/share/sounds"
    assert "/opt/huxleyd" not in text


def test_venv_points_at_the_final_prefix(installed: tuple[Path, str]) -> None:
    destdir, _ = installed
    venv = destdir / PREFIX.lstrip("/") / "venv"
    for name in ("huxleyd", "huxleyctl"):
        first_line = (venv / "bin" / name).read_text().splitlines()[0]
        assert first_line == f"#!{PREFIX}/venv/bin/python"  # not the DESTDIR path
    assert str(destdir) not in (venv / "pyvenv.cfg").read_text()
    link = destdir / "usr/local/bin/huxleyctl"
    assert os.readlink(link) == f"{PREFIX}/venv/bin/huxleyctl"
    # The package itself is installed in the venv, not borrowed from the tree.
    out = subprocess.run(
        [str(venv / "bin/python"), "-c", "import huxleyd.hardware.boards as b; print(b.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=destdir,
        check=True,
    ).stdout
    assert out.startswith(str(venv)), out


def test_the_sdk_is_its_own_distribution_in_the_venv(installed: tuple[Path, str]) -> None:
    # huxley-sdk (sdk/) is installed beside huxleyd, so a Huxley skill's
    # "huxley-sdk>=0.1.1,<0.2" finds it; huxleyd's wheel does not carry it.
    destdir, _ = installed
    venv = destdir / PREFIX.lstrip("/") / "venv"
    probe = (
        "import importlib.metadata as m, huxley_sdk; "
        "print(m.version('huxley-sdk'), huxley_sdk.__file__); "
        "print(sorted({f.parts[0] for f in m.files('huxleyd') or []}))"
    )
    version_line, huxleyd_parts = subprocess.run(
        [str(venv / "bin/python"), "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=destdir,
        check=True,
    ).stdout.splitlines()
    version, location = version_line.split()
    assert version == "0.1.2+huxleyd" and location.startswith(str(venv))
    assert "huxley_sdk" not in huxleyd_parts


def test_the_c_audio_extensions_are_built_into_the_venv(installed: tuple[Path, str]) -> None:
    # setup.py declares them (optional: an install without a compiler still
    # works), so a stage without setup.py installs the pure-Python fallbacks
    # without a word; the image's kernel test found its daemon so.
    destdir, _ = installed
    venv = destdir / PREFIX.lstrip("/") / "venv"
    probe = "import huxleyd.audio._rt, huxleyd.audio._dsp; print('ok')"
    result = subprocess.run(
        [str(venv / "bin/python"), "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=destdir,
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_the_install_records_no_random_build_directory(installed: tuple[Path, str]) -> None:
    """Two images of one commit must hold the same bytes: pip records the
    directory it built from (direct_url.json, hashed into RECORD) and the
    compiler writes it into the C extensions' debug information, so it is
    the venv's fixed neighbour, mapped away in the objects, and removed."""
    destdir, _ = installed
    venv = destdir / PREFIX.lstrip("/") / "venv"
    stage = venv.with_name("venv.build")
    urls = {
        info.parent.name.split("-")[0]: json.loads(info.read_text())["url"]
        for info in venv.glob("lib/python3*/site-packages/*.dist-info/direct_url.json")
    }
    assert urls == {"huxley_sdk": f"file://{stage}/sdk", "huxleyd": f"file://{stage}"}
    assert not stage.exists()
    objects = list(venv.glob("lib/python3*/site-packages/huxleyd/audio/_*.so"))
    assert len(objects) >= 2
    for obj in objects:
        data = obj.read_bytes()
        assert b"venv.build" not in data and str(destdir).encode() not in data, obj.name


def test_nothing_enabled_when_staging(installed: tuple[Path, str]) -> None:
    _, output = installed
    assert "not enabling anything" in output


def test_edited_config_survives_a_second_install(installed: tuple[Path, str]) -> None:
    destdir, _ = installed
    config = destdir / "etc/huxleyd/huxleyd.toml"
    edited = config.read_text() + '\n# edited by the admin\n[hardware]\nboard = "voice-bonnet"\n'
    config.write_text(edited)
    (destdir / "etc/huxleyd/openai.key").write_text("sk-test\n")
    output = _run("install.sh", destdir)
    assert config.read_text() == edited
    dist = config.with_name("huxleyd.toml.dist")
    assert dist.read_text() == _configured(None)  # this install gave no BOARD
    assert f"kept your edited {config}" in output
    assert (destdir / "etc/huxleyd/openai.key").read_text() == "sk-test\n"
    personas = destdir / "etc/huxleyd/personas"
    assert not list(personas.glob("*.dist"))  # unedited: nothing beside them

    # Uninstall takes back ours and keeps the admin's.
    output = _run("uninstall.sh", destdir)
    assert not (destdir / PREFIX.lstrip("/")).exists()
    assert not (destdir / "lib/systemd/system/huxleyd.service").exists()
    assert not (destdir / "usr/lib/sysusers.d/huxleyd.conf").exists()
    assert not (destdir / "usr/lib/udev/rules.d/60-huxleyd.rules").exists()
    assert not (destdir / "usr/local/bin/huxleyctl").is_symlink()
    assert config.read_text() == edited
    assert "kept" in output


def test_relative_prefix_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        ["sh", str(ROOT / "scripts/install.sh"), str(tmp_path), "opt"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "absolute" in result.stderr
    assert not any(tmp_path.iterdir())


def test_an_unknown_board_stops_the_install(tmp_path: Path) -> None:
    result = subprocess.run(
        ["sh", str(ROOT / "scripts" / "install.sh"), str(tmp_path), PREFIX],
        env={
            **os.environ,
            "PYTHON": sys.executable,
            "HUXLEYD_PIP_ARGS": "--no-deps",
            "BOARD": "respeaker-3mic",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert "unknown BOARD 'respeaker-3mic'" in result.stderr and "respeaker-2mic" in result.stderr


def test_system_deps_include_what_a_minimal_debian_needs_to_build(tmp_path: Path) -> None:
    """With nothing installed, the script asks apt for the compiler, headers and venv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    for name, body in {
        "dpkg-query": "exit 1",
        "id": "echo 0",
        "apt-get": f'echo "$@" >> {log}',
    }.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    result = subprocess.run(
        ["/bin/sh", str(ROOT / "scripts" / "ensure-system-deps.sh")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    install = next(line for line in log.read_text().splitlines() if "install" in line).split()
    for package in ("gcc", "python3-dev", "python3-venv", "portaudio19-dev", "libsystemd-dev"):
        assert package in install


def test_tmpfiles_make_the_skills_environments_folder(tmp_path: Path) -> None:
    """The folder huxleyctl makes the skills environment in exists on an installed system,
    root's to write and everyone's to read (the skill host runs from it as its own user);
    the skills' data folder beside it is the skill user's alone (hosts make theirs in it)."""
    from huxleyd.skillhost.skillenv import INSTALLED_ROOT

    tool = shutil.which("systemd-tmpfiles")
    if tool is None:
        pytest.skip("no systemd-tmpfiles here")
    conf = tmp_path / "huxleyd.conf"
    lines = (ROOT / "systemd/huxleyd.tmpfiles").read_text().splitlines()
    conf.write_text("".join(f"{ln}\n" for ln in lines if "huxleyd-skills" in ln))
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    sysusers = shutil.which("systemd-sysusers")
    if sysusers is None or os.geteuid() != 0:
        pytest.skip("the scratch root's users and owners need systemd-sysusers and root")
    made = subprocess.run(
        [sysusers, f"--root={root}", str(ROOT / "systemd/huxleyd.sysusers")],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    done = subprocess.run(
        [tool, "--create", f"--root={root}", str(conf)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    folder = root / INSTALLED_ROOT.parent.relative_to("/")
    st = folder.stat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o755, 0, 0)
    users = {
        line.split(":")[0]: int(line.split(":")[2])
        for line in (root / "etc/passwd").read_text().splitlines()
    }
    data = (folder / "data").stat()
    assert (stat.S_IMODE(data.st_mode), data.st_uid) == (0o700, users["huxley-skills"])
