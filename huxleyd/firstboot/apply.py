"""Apply a checked :class:`SetupFile` to a system rooted at ``root``.

Everything is a file written under ``root`` (tests pass a temporary
directory); the few things that are not files (enabling and starting a
unit, regenerating ``config.txt``, host keys) go through the injected
``run(argv)``. All of it runs in a :class:`~.transaction.Transaction`:
files first, then the commands, each with its undo, so a failure at any
step is rolled back and the system is as before. The API key is written
root-only (0600) and never logged.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from huxleyd.firstboot.setup_file import SetupFile, WifiSetup
from huxleyd.firstboot.transaction import Runner, StepFailed, Transaction
from huxleyd.hardware.devicetree import board_device_tree

__all__ = ["Applied", "Runner", "StepFailed", "apply_setup", "set_toml_value", "wipe_file"]

CONFIG = "etc/huxleyd/huxleyd.toml"
FIRMWARE_CUSTOM = "etc/default/raspi-firmware-custom"
FILES_FIX = (
    "the card's root file system could not be written: check the card on a computer "
    "(fsck) or flash the image again"
)
DEVICETREE_FIX = (
    "the board's overlays do not apply to this kernel: choose another [device] board, "
    "or report it with this file"
)
UNITS_FIX = "a system service is missing or broken: flash the image again"
START_FIX = "a service could not be started; the journal (journalctl -b) says why"
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


# -- the files ----------------------------------------------------------------------


def _hostname(tx: Transaction, hostname: str, applied: Applied) -> None:
    tx.write("etc/hostname", hostname + "\n")
    hosts = tx.root / "etc/hosts"
    lines = hosts.read_text().splitlines() if hosts.is_file() else []
    lines = [line for line in lines if not line.startswith("127.0.1.1")]
    lines.append(f"127.0.1.1\t{hostname}")
    tx.write("etc/hosts", "\n".join(lines) + "\n")
    applied.done.append(f"hostname: {hostname}")


def _timezone(tx: Transaction, timezone: str, applied: Applied) -> None:
    tx.symlink("etc/localtime", f"/usr/share/zoneinfo/{timezone}")
    tx.write("etc/timezone", timezone + "\n")
    applied.done.append(f"timezone: {timezone}")


def _provider(tx: Transaction, setup: SetupFile, applied: Applied) -> None:
    text = (tx.root / CONFIG).read_text()
    kind = setup.provider
    if kind is not None:
        text = set_toml_value(text, "provider", "kind", kind)
        applied.done.append(f"provider: {kind}")
    tx.write(CONFIG, text)
    if setup.api_key is None:
        return
    key_kind = kind or "openai"
    applied.key_file = tx.write(f"etc/huxleyd/{key_kind}.key", setup.api_key + "\n", 0o600)
    # The unit hands the key to the daemon as the credential "openai-key"
    # (whatever the provider): point it at this provider's file.
    dropin = "etc/systemd/system/huxleyd.service.d/provider-key.conf"
    if key_kind == "openai":
        tx.unlink(dropin)
    else:
        tx.write(
            dropin,
            "# Written by huxleyd's first boot: the key of the chosen provider.\n"
            f"[Service]\nLoadCredential=\nLoadCredential=openai-key:/etc/huxleyd/{key_kind}.key\n",
        )
    applied.done.append(f"key: /etc/huxleyd/{key_kind}.key (0600)")


def _board(tx: Transaction, board: str, share_hw: Path, applied: Applied) -> bool:
    """The board's files; True when config.txt must be regenerated (overlays changed)."""
    tx.write(CONFIG, set_toml_value((tx.root / CONFIG).read_text(), "hardware", "board", board))
    asound = share_hw / f"{board}.asound.conf"
    if asound.is_file():
        tx.write("etc/asound.conf", asound.read_text())
    overlays = board_device_tree(board).overlays
    custom = tx.root / FIRMWARE_CUSTOM
    wanted = _FIRMWARE_CUSTOM_HEADER + f"# board: {board}\n" + "".join(f"{o}\n" for o in overlays)
    old = custom.read_text() if custom.is_file() else ""
    applied.done.append(f"board: {board}" + (f" ({', '.join(overlays)})" if overlays else ""))
    if old == wanted:
        return False
    tx.write(FIRMWARE_CUSTOM, wanted)
    old_overlays = [line for line in old.splitlines() if line.startswith("dtoverlay=")]
    applied.reboot_needed = old_overlays != list(overlays)
    return True


def _wifi(tx: Transaction, wifi: WifiSetup, applied: Applied) -> None:
    security = (
        f"    psk={wpa_psk(wifi.ssid, wifi.password)}\n"
        if wifi.password is not None
        else "    key_mgmt=NONE\n"
    )
    tx.write(
        "etc/wpa_supplicant/wpa_supplicant-wlan0.conf",
        "# Written by huxleyd's first boot (huxleyd-setup.toml).\n"
        "ctrl_interface=/run/wpa_supplicant\n"
        f"country={wifi.country}\n"
        "network={\n"
        f"    ssid={wifi.ssid.encode().hex()}\n"
        f"{security}"
        "}\n",
        mode=0o600,
    )
    tx.write(
        "etc/systemd/network/20-wlan0.network",
        "# Written by huxleyd's first boot: DHCP on the Wi-Fi link, and\n"
        "# Multicast DNS: the speaker answers as <hostname>.local.\n"
        "[Match]\nName=wlan0\n\n[Network]\nDHCP=yes\nMulticastDNS=yes\n",
    )
    applied.done.append(f"wifi: {wifi.ssid} ({wifi.country})")


def _ssh_files(tx: Transaction, keys: tuple[str, ...], applied: Applied) -> None:
    tx.write("root/.ssh/authorized_keys", "".join(k + "\n" for k in keys), 0o600)
    tx.chmod("root/.ssh", 0o700)
    applied.done.append(f"ssh: on, {len(keys)} key(s) for root")


# -- the commands -------------------------------------------------------------------


def _new_host_keys(root: Path, before: set[Path]) -> None:
    """Undo of ``ssh-keygen -A``: the host keys it made (none existed before)."""
    for path in (root / "etc/ssh").glob("ssh_host_*"):
        if path not in before:
            path.unlink()


def _ssh_commands(tx: Transaction) -> None:
    before = set((tx.root / "etc/ssh").glob("ssh_host_*"))
    tx.on_rollback(lambda: _new_host_keys(tx.root, before))
    tx.run(["ssh-keygen", "-A"])
    if (tx.root / "etc/systemd/system/ssh.socket").is_symlink():  # masked by the image
        tx.run(["systemctl", "unmask", "ssh.socket"], undo=["systemctl", "mask", "ssh.socket"])
    tx.run(["systemctl", "enable", "ssh.service"], undo=["systemctl", "disable", "ssh.service"])


def _regenerate_firmware(tx: Transaction, kernel: str) -> None:
    """raspi-firmware's kernel hook rewrites config.txt from raspi-firmware-custom
    (it acts only for a "configure" call, as from dpkg); ours readies the device
    trees after it. Not all of postinst.d: that would rebuild the initramfs."""
    for hook in KERNEL_HOOKS:
        tx.run(["env", "DEB_MAINT_PARAMS=configure", hook, kernel])


def apply_setup(
    setup: SetupFile,
    *,
    root: Path,
    share_hw: Path,
    kernel: str,
    run: Runner,
) -> Applied:
    """Apply ``setup`` under ``root``, all or nothing; ``kernel`` is ``uname -r``.

    Raises :class:`StepFailed` (naming the step and the fix) after rolling
    every change back; ``rollback_failures`` on it lists what could not be.
    """
    applied = Applied()
    tx = Transaction(root, run)
    try:
        _apply(tx, setup, share_hw, kernel, applied)
    except StepFailed as failed:
        failed.rollback_failures = tx.rollback()
        raise
    return applied


def _apply(
    tx: Transaction, setup: SetupFile, share_hw: Path, kernel: str, applied: Applied
) -> None:
    """Files first, then commands; the order in which each can be taken back."""
    done: set[str] = set()
    # Registered first, so a rollback runs them last: once the old files are
    # back, config.txt, the units and networkd are made from them again.
    tx.on_rollback(lambda: _redo_after_rollback(tx, done, kernel))
    old_hostname = _read_line(tx.root / "etc/hostname")
    with tx.step("files", FILES_FIX):
        if setup.hostname is not None:
            _hostname(tx, setup.hostname, applied)
        if setup.timezone is not None:
            _timezone(tx, setup.timezone, applied)
        if setup.provider is not None or setup.api_key is not None:
            _provider(tx, setup, applied)
        new_overlays = setup.board is not None and _board(tx, setup.board, share_hw, applied)
        if setup.wifi is not None:
            _wifi(tx, setup.wifi, applied)
        if setup.ssh:
            _ssh_files(tx, setup.ssh_keys, applied)
    if new_overlays:
        with tx.step("device trees (config.txt and overlays)", DEVICETREE_FIX):
            done.add("firmware")
            _regenerate_firmware(tx, kernel)
    with tx.step("system services", UNITS_FIX):
        # The running systemd reads unit files and drop-ins (the provider's
        # key credential) only on a reload; huxleyd starts after this.
        done.add("units")
        tx.run(["systemctl", "daemon-reload"])
        if setup.hostname is not None:
            undo = ["hostname", old_hostname] if old_hostname else None
            tx.run(["hostname", setup.hostname], undo=undo)
        if setup.wifi is not None:
            unit = "wpa_supplicant@wlan0.service"
            tx.run(["systemctl", "enable", unit], undo=["systemctl", "disable", unit])
        if setup.ssh:
            _ssh_commands(tx)
    with tx.step("starting the network and SSH in this boot", START_FIX):
        _start_now(tx, setup, done)


def _start_now(tx: Transaction, setup: SetupFile, done: set[str]) -> None:
    """``enable`` adds a unit to the next boot only: this boot's transaction
    was made before the files existed, so what was asked for is started too
    (queued: first boot runs early, before the network, and must not wait)."""
    if setup.wifi is not None:
        unit = "wpa_supplicant@wlan0.service"
        tx.run(
            ["systemctl", "start", "--no-block", unit],
            undo=["systemctl", "stop", "--no-block", unit],
        )
        # A networkd already running (a setup file added later) reads the
        # new .network on a reload; one not started yet reads it at start.
        done.add("networkd")
        tx.run(["systemctl", "try-reload-or-restart", "--no-block", "systemd-networkd.service"])
    if setup.ssh:
        tx.run(
            ["systemctl", "start", "--no-block", "ssh.service"],
            undo=["systemctl", "stop", "--no-block", "ssh.service"],
        )


def _redo_after_rollback(tx: Transaction, done: set[str], kernel: str) -> None:
    if "firmware" in done:
        _regenerate_firmware(tx, kernel)
    if "units" in done:
        tx.run(["systemctl", "daemon-reload"])
    if "networkd" in done:
        tx.run(["systemctl", "try-reload-or-restart", "--no-block", "systemd-networkd.service"])


def _read_line(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
