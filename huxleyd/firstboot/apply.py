"""Apply a checked :class:`SetupFile` to a system rooted at ``root``.

Everything is a file written under ``root`` (tests pass a temporary
directory); the few things that are not files — enabling a unit,
regenerating ``config.txt``, host keys — go through the injected
``run(argv)``. The API key is written root-only (0600) and never logged.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.firstboot.setup_file import SetupFile, WifiSetup
from huxleyd.hardware.devicetree import board_device_tree

__all__ = ["Applied", "Runner", "apply_setup", "set_toml_value", "wipe_file"]

Runner = Callable[[Sequence[str]], None]
"""Runs a command (argv) on the target; raises when it fails."""

CONFIG = "etc/huxleyd/huxleyd.toml"
FIRMWARE_CUSTOM = "etc/default/raspi-firmware-custom"
KERNEL_HOOKS = (
    "/etc/kernel/postinst.d/z50-raspi-firmware",
    "/etc/kernel/postinst.d/z60-huxleyd-devicetree",
)
_FIRMWARE_CUSTOM_HEADER = """\
# Appended to /boot/firmware/config.txt by raspi-firmware's kernel hook.
# Written by huxleyd's first boot for the board profile below; the overlays
# are huxleyd's own (hw/README.md, "Device trees on a Debian base").
"""


@dataclass
class Applied:
    reboot_needed: bool = False
    """The board's device-tree overlays changed: they take effect at the next boot."""
    key_file: Path | None = None
    done: list[str] = field(default_factory=list)
    """What was changed, one short line each (no secrets)."""


def set_toml_value(text: str, section: str, key: str, value: str) -> str:
    """``key = "value"`` inside ``[section]`` of a commented TOML file.

    The first uncommented assignment in the section is replaced, else a
    commented-out one (``# key = ...``), else a line is added after the
    header (and the section at the end when it is missing). Comments and
    every other line stay as the admin wrote them.
    """
    literal = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    line = f"{key} = {literal}"
    lines = text.splitlines(keepends=True)
    header = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]\s*(#.*)?$")
    start = next((i for i, raw in enumerate(lines) if header.match(raw)), None)
    if start is None:
        sep = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{sep}\n[{section}]\n{line}\n"
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines)
    )
    for pattern in (rf"^\s*{re.escape(key)}\s*=", rf"^\s*#\s*{re.escape(key)}\s*="):
        for i in range(start + 1, end):
            if re.match(pattern, lines[i]):
                lines[i] = line + "\n"
                return "".join(lines)
    lines.insert(start + 1, line + "\n")
    return "".join(lines)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".firstboot-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow it
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def wipe_file(path: Path) -> None:
    """Overwrite ``path`` with zeros, then remove it (the FAT copy of the key).

    On FAT the zeros land on the same clusters, so the key is not left in
    the free space of the card; wear levelling on the card itself may keep
    an old copy, which no file system call can reach (docs/image.md).
    """
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.write(b"\0" * size)
        handle.flush()
        os.fsync(handle.fileno())
    path.unlink()


def wpa_psk(ssid: str, passphrase: str) -> str:
    """WPA2's pre-shared key: PBKDF2-HMAC-SHA1(passphrase, ssid, 4096, 32), in hex.

    Stored instead of the passphrase, so wpa_supplicant's file needs no
    quoting rules and the passphrase itself is not on the device.
    """
    return hashlib.pbkdf2_hmac("sha1", passphrase.encode(), ssid.encode(), 4096, 32).hex()


def _wifi(root: Path, wifi: WifiSetup, run: Runner, applied: Applied) -> None:
    security = (
        f"    psk={wpa_psk(wifi.ssid, wifi.password)}\n"
        if wifi.password is not None
        else "    key_mgmt=NONE\n"
    )
    _write(
        root / "etc/wpa_supplicant/wpa_supplicant-wlan0.conf",
        "# Written by huxleyd's first boot (huxleyd-setup.toml).\n"
        "ctrl_interface=/run/wpa_supplicant\n"
        f"country={wifi.country}\n"
        "network={\n"
        f"    ssid={wifi.ssid.encode().hex()}\n"
        f"{security}"
        "}\n",
        mode=0o600,
    )
    _write(
        root / "etc/systemd/network/20-wlan0.network",
        "# Written by huxleyd's first boot: DHCP on the Wi-Fi link.\n"
        "[Match]\nName=wlan0\n\n[Network]\nDHCP=yes\n",
    )
    run(["systemctl", "enable", "wpa_supplicant@wlan0.service"])
    applied.done.append(f"wifi: {wifi.ssid} ({wifi.country})")


def _provider(root: Path, setup: SetupFile, applied: Applied) -> None:
    config = root / CONFIG
    text = config.read_text()
    kind = setup.provider
    if kind is not None:
        text = set_toml_value(text, "provider", "kind", kind)
        applied.done.append(f"provider: {kind}")
    _write(config, text)
    if setup.api_key is None:
        return
    key_kind = kind or "openai"
    key_file = root / "etc/huxleyd" / f"{key_kind}.key"
    _write(key_file, setup.api_key + "\n", mode=0o600)
    applied.key_file = key_file
    # The unit hands the key to the daemon as the credential "openai-key"
    # (whatever the provider): point it at this provider's file.
    dropin = root / "etc/systemd/system/huxleyd.service.d/provider-key.conf"
    if key_kind == "openai":
        dropin.unlink(missing_ok=True)
    else:
        _write(
            dropin,
            "# Written by huxleyd's first boot: the key of the chosen provider.\n"
            f"[Service]\nLoadCredential=\nLoadCredential=openai-key:/etc/huxleyd/{key_kind}.key\n",
        )
    applied.done.append(f"key: /etc/huxleyd/{key_kind}.key (0600)")


def _board(
    root: Path, board: str, share_hw: Path, kernel: str, run: Runner, applied: Applied
) -> None:
    config = root / CONFIG
    _write(config, set_toml_value(config.read_text(), "hardware", "board", board))
    asound = share_hw / f"{board}.asound.conf"
    if asound.is_file():
        _write(root / "etc/asound.conf", asound.read_text())
    overlays = board_device_tree(board).overlays
    custom = root / FIRMWARE_CUSTOM
    wanted = _FIRMWARE_CUSTOM_HEADER + f"# board: {board}\n" + "".join(f"{o}\n" for o in overlays)
    old = custom.read_text() if custom.is_file() else ""
    if old != wanted:
        _write(custom, wanted)
        # raspi-firmware's kernel hook rewrites config.txt from it (it acts
        # only for a "configure" call, as from dpkg); ours readies the
        # device trees after it. Not all of postinst.d: that would rebuild
        # the initramfs for nothing.
        for hook in KERNEL_HOOKS:
            run(["env", "DEB_MAINT_PARAMS=configure", hook, kernel])
        old_overlays = [line for line in old.splitlines() if line.startswith("dtoverlay=")]
        applied.reboot_needed = old_overlays != list(overlays)
    applied.done.append(f"board: {board}" + (f" ({', '.join(overlays)})" if overlays else ""))


def apply_setup(
    setup: SetupFile,
    *,
    root: Path,
    share_hw: Path,
    kernel: str,
    run: Runner,
) -> Applied:
    """Write what ``setup`` asks for under ``root``; ``kernel`` is ``uname -r``."""
    applied = Applied()
    if setup.hostname is not None:
        _write(root / "etc/hostname", setup.hostname + "\n")
        hosts = root / "etc/hosts"
        lines = hosts.read_text().splitlines() if hosts.is_file() else []
        lines = [line for line in lines if not line.startswith("127.0.1.1")]
        lines.append(f"127.0.1.1\t{setup.hostname}")
        _write(hosts, "\n".join(lines) + "\n")
        run(["hostname", setup.hostname])
        applied.done.append(f"hostname: {setup.hostname}")
    if setup.timezone is not None:
        localtime = root / "etc/localtime"
        localtime.unlink(missing_ok=True)
        localtime.symlink_to(f"/usr/share/zoneinfo/{setup.timezone}")
        _write(root / "etc/timezone", setup.timezone + "\n")
        applied.done.append(f"timezone: {setup.timezone}")
    if setup.provider is not None or setup.api_key is not None:
        _provider(root, setup, applied)
    if setup.board is not None:
        _board(root, setup.board, share_hw, kernel, run, applied)
    if setup.wifi is not None:
        _wifi(root, setup.wifi, run, applied)
    if setup.ssh:
        _write(root / "root/.ssh/authorized_keys", "".join(k + "\n" for k in setup.ssh_keys), 0o600)
        (root / "root/.ssh").chmod(0o700)
        run(["ssh-keygen", "-A"])
        run(["systemctl", "unmask", "ssh.socket"])
        run(["systemctl", "enable", "ssh.service"])
        applied.done.append(f"ssh: on, {len(setup.ssh_keys)} key(s) for root")
    return applied
