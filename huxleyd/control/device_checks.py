"""Doctor checks for the devices a board needs: can the service open them,
and did the device tree create them.

Separate from :mod:`huxleyd.control.doctor` (same :class:`DoctorCheck`
shape) because they are about the system image under the daemon: the udev
rules (``60-huxleyd.rules``: groups ``gpio`` and ``spi``) and the board's
device-tree overlays (:mod:`huxleyd.hardware.devicetree`). The daemon runs
them as the service user, so "can open" means "the service can open".
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from huxleyd.control.handler import DoctorCheck
from huxleyd.hardware.devicetree import board_device_tree

__all__ = [
    "check_board_devices",
    "check_device_access",
    "check_gpio_chips",
    "device_checks",
]

Opener = Callable[[Path], None]
"""Opens a device read-write and closes it again; raises OSError when it cannot."""

_GROUP_FIX = (
    "udev gives group {group} these devices (/usr/lib/udev/rules.d/60-huxleyd.rules, "
    "installed with the service): check `ls -l {path}` shows group {group} and mode 0660, "
    "run `udevadm trigger` after installing, and keep {group} in the unit's SupplementaryGroups="
)


def open_device(path: Path) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    os.close(fd)


def check_device_access(
    name: str,
    paths: list[Path],
    *,
    group: str,
    required: bool,
    opener: Opener = open_device,
) -> DoctorCheck:
    """Each of ``paths`` opens read-write for this process.

    ``required`` False (mock pins, a board without SPI) makes "no such
    device" a skip that says so (nothing was opened, so nothing is passed);
    permission denied is always a failure.
    """
    if not paths:
        if required:
            return DoctorCheck(
                name,
                False,
                "no device",
                "the board's device tree did not create it: see hw/README.md "
                "(Device trees on a Debian base) and `huxleyctl doctor` after a reboot",
            )
        return DoctorCheck.skipped(name, "no such device here, and none is needed")
    problems: list[str] = []
    fix = ""
    for path in paths:
        try:
            opener(path)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}")
            if exc.errno in (errno.EACCES, errno.EPERM):
                fix = _GROUP_FIX.format(group=group, path=path)
            elif not fix:
                fix = "the board's device tree did not create it: see hw/README.md"
    if problems:
        return DoctorCheck(name, False, "; ".join(problems), fix)
    return DoctorCheck(name, True, "opens: " + ", ".join(str(p) for p in paths))


def check_gpio_chips(*, required: bool, dev: Path = Path("/dev")) -> DoctorCheck:
    """Every ``/dev/gpiochip*`` opens (the Pi's header is one of them)."""
    chips = sorted(dev.glob("gpiochip*"))
    return check_device_access("gpio chip", chips, group="gpio", required=required)


def check_board_devices(
    board: str, *, asound_cards: Path = Path("/proc/asound/cards"), dev: Path = Path("/dev")
) -> DoctorCheck:
    """The board's sound card and SPI devices exist (its overlays were applied)."""
    needs = board_device_tree(board)
    missing: list[str] = []
    found: list[str] = []
    if needs.sound_card is not None:
        try:
            cards = asound_cards.read_text()
        except OSError:
            cards = ""
        ids = {
            line.split("[", 1)[1].split("]", 1)[0].strip()
            for line in cards.splitlines()
            if "[" in line
        }
        if needs.sound_card in ids:
            found.append(f"sound card {needs.sound_card}")
        else:
            listed = ", ".join(sorted(ids)) or "none"
            missing.append(f"sound card {needs.sound_card} (cards: {listed})")
    for spi in needs.spi_devices:
        path = dev / Path(spi).name
        (found if path.exists() else missing).append(str(path))
    if missing:
        overlays = " ".join(needs.overlays) or "none"
        return DoctorCheck(
            "board devices",
            False,
            f"{board}: missing " + "; ".join(missing),
            f"the board needs {overlays} in /boot/firmware/config.txt (written from "
            "/etc/default/raspi-firmware-custom) and a reboot: hw/README.md",
        )
    if not found:
        return DoctorCheck("board devices", True, f"{board}: needs no device-tree overlay")
    return DoctorCheck("board devices", True, f"{board}: " + ", ".join(found))


def device_checks(board: str, *, real_pins: bool) -> list[Callable[[], DoctorCheck]]:
    """The daemon's device checks for ``board``: required only with real pins
    (mock pins on a laptop or under emulation need no device)."""
    spi = [Path(p) for p in board_device_tree(board).spi_devices]
    checks: list[Callable[[], DoctorCheck]] = [
        partial(check_gpio_chips, required=real_pins),
        partial(check_device_access, "spi device", spi, group="spi", required=real_pins),
    ]
    if real_pins:
        checks.append(partial(check_board_devices, board))
    return checks
