"""Doctor's device checks against real files: a device that opens, one that
is missing, one the service may not open, and the board's overlay devices."""

from __future__ import annotations

import errno
from pathlib import Path

from huxleyd.control.device_checks import (
    check_board_devices,
    check_device_access,
    check_gpio_chips,
)

CARDS_RESPEAKER = """\
 0 [vc4hdmi0       ]: vc4-hdmi - vc4-hdmi-0
                      vc4-hdmi-0
 1 [seeed2micvoicec]: simple-card - seeed2micvoicec
                      seeed2micvoicec
"""


def test_a_device_that_opens(tmp_path: Path) -> None:
    chip = tmp_path / "gpiochip0"
    chip.write_bytes(b"")
    check = check_device_access("gpio chip", [chip], group="gpio", required=True)
    assert check.ok and str(chip) in check.detail


def test_permission_denied_points_at_the_udev_rule(tmp_path: Path) -> None:
    chip = tmp_path / "gpiochip0"

    def denied(path: Path) -> None:  # root opens any file: the kernel's answer, given
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    check = check_device_access("gpio chip", [chip], group="gpio", required=True, opener=denied)
    assert not check.ok
    assert "Permission denied" in check.detail
    assert "60-huxleyd.rules" in check.fix and "group gpio" in check.fix


def test_a_vanished_device(tmp_path: Path) -> None:
    check = check_device_access("spi", [tmp_path / "spidev0.1"], group="spi", required=True)
    assert not check.ok and "No such file" in check.detail and "hw/README.md" in check.fix


def test_no_device_is_fine_only_when_none_is_needed() -> None:
    assert check_device_access("gpio chip", [], group="gpio", required=False).ok
    assert not check_device_access("gpio chip", [], group="gpio", required=True).ok


def test_board_devices_present(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    cards.write_text(CARDS_RESPEAKER)
    (tmp_path / "spidev0.1").write_bytes(b"")
    check = check_board_devices("respeaker-2mic", asound_cards=cards, dev=tmp_path)
    assert check.ok, check
    assert "seeed2micvoicec" in check.detail and "spidev0.1" in check.detail


def test_board_devices_missing_names_the_overlays(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    cards.write_text(CARDS_RESPEAKER.split(" 1 [")[0])
    check = check_board_devices("respeaker-2mic", asound_cards=cards, dev=tmp_path)
    assert not check.ok
    assert "sound card seeed2micvoicec (cards: vc4hdmi0)" in check.detail
    assert "spidev0.1" in check.detail
    assert "dtoverlay=huxley-wm8960 dtoverlay=huxley-spi0" in check.fix


def test_a_usb_board_needs_no_overlay(tmp_path: Path) -> None:
    check = check_board_devices("gpio-basic", asound_cards=tmp_path / "none", dev=tmp_path)
    assert check.ok and "no device-tree overlay" in check.detail


def test_gpio_chips_are_found_in_dev(tmp_path: Path) -> None:
    (tmp_path / "gpiochip0").write_bytes(b"")
    (tmp_path / "gpiochip1").write_bytes(b"")
    check = check_gpio_chips(required=True, dev=tmp_path)
    assert check.ok and "gpiochip0" in check.detail and "gpiochip1" in check.detail
    assert not check_gpio_chips(required=True, dev=tmp_path / "empty").ok


def test_the_daemon_adds_the_board_check_only_with_real_pins() -> None:
    from huxleyd.control.device_checks import device_checks

    assert len(device_checks("respeaker-2mic", real_pins=False)) == 2
    real = device_checks("respeaker-2mic", real_pins=True)
    assert len(real) == 3
    assert real[-1]().name == "board devices"
