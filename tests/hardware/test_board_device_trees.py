"""What each shipped board needs from the device tree agrees with its profile
(hw/*.toml) and with the overlays the image compiles (hw/dt/*.dts)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from huxleyd.hardware.devicetree import BOARD_DEVICE_TREES, BoardDeviceTree, board_device_tree

HW = Path(__file__).resolve().parents[2] / "hw"
PROFILES = {p.stem: tomllib.loads(p.read_text()) for p in sorted(HW.glob("*.toml"))}


def test_every_shipped_board_has_a_row_and_every_row_a_board() -> None:
    assert set(PROFILES) == set(BOARD_DEVICE_TREES)


@pytest.mark.parametrize("board", sorted(PROFILES))
def test_the_overlays_are_compiled_from_hw_dt(board: str) -> None:
    for line in board_device_tree(board).overlays:
        key, _, name = line.partition("=")
        assert key == "dtoverlay", line
        assert (HW / "dt" / f"{name}.dts").is_file(), f"{board}: no hw/dt/{name}.dts"


@pytest.mark.parametrize("board", sorted(PROFILES))
def test_the_sound_card_and_spi_devices_are_the_profiles(board: str) -> None:
    profile, needs = PROFILES[board], board_device_tree(board)
    if needs.sound_card is not None:  # a HAT's card: the mixer the daemon drives
        assert profile["audio"]["mixer_card"] == needs.sound_card
        assert needs.overlays, f"{board}: a HAT's card needs an overlay"
    leds = profile.get("leds", {})
    spi = [f"/dev/spidev{leds['spi_bus']}.{leds['spi_device']}"] if "spi_bus" in leds else []
    assert list(needs.spi_devices) == spi


def test_a_board_of_ones_own_needs_nothing_known() -> None:
    assert board_device_tree("my-own-hat") == BoardDeviceTree((), None, ())
    assert board_device_tree("gpio-basic") == BoardDeviceTree((), None, ())
