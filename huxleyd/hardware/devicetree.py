"""What each board profile needs from the device tree, on the Debian image.

Raspberry Pi OS ships ``overlays/*.dtbo`` and device trees with a
``__symbols__`` node, so ``dtoverlay=wm8960-soundcard`` just works there.
Debian's raspi-firmware + linux-image-arm64 ship the kernel's upstream
device trees: no ``__symbols__``, no overlays. The image therefore carries
its own overlays (``hw/dt/*.dts``, compiled with ``dtc``) and a kernel hook
that adds the few labels they refer to (hw/README.md, "Device trees on a
Debian base"). This table says, per board, which overlay lines go into
``/etc/default/raspi-firmware-custom`` and what must then exist, which
``huxleyctl doctor`` checks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOARD_DEVICE_TREES", "BoardDeviceTree", "board_device_tree"]


@dataclass(frozen=True, slots=True)
class BoardDeviceTree:
    overlays: tuple[str, ...]
    """``config.txt`` lines (``dtoverlay=NAME``), in the order the firmware applies them."""
    sound_card: str | None
    """ALSA card id the overlay creates (``/proc/asound/cards``); None: USB audio, any card."""
    spi_devices: tuple[str, ...]
    """``/dev/spidev*`` nodes the LEDs use; empty when the board needs no SPI."""


BOARD_DEVICE_TREES: dict[str, BoardDeviceTree] = {
    # A USB speakerphone: no overlay. The button and LED are plain GPIO.
    "gpio-basic": BoardDeviceTree(overlays=(), sound_card=None, spi_devices=()),
    # WM8960 on I2C1 + I2S, and the APA102 LEDs on SPI0 (spidev0.1).
    "respeaker-2mic": BoardDeviceTree(
        overlays=("dtoverlay=huxley-wm8960", "dtoverlay=huxley-spi0"),
        sound_card="seeed2micvoicec",
        spi_devices=("/dev/spidev0.1",),
    ),
    # Same codec; its DotStar LEDs are bit-banged on GPIO5/6, not SPI.
    "voice-bonnet": BoardDeviceTree(
        overlays=("dtoverlay=huxley-wm8960",), sound_card="seeed2micvoicec", spi_devices=()
    ),
}


def board_device_tree(board: str) -> BoardDeviceTree:
    """The board's needs; a profile not in the table (a user's own) needs nothing known."""
    return BOARD_DEVICE_TREES.get(
        board, BoardDeviceTree(overlays=(), sound_card=None, spi_devices=())
    )
