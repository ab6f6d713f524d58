"""The image's device-tree hook on a tree shaped like Debian's: without the
hook huxleyd's overlays cannot apply (no __symbols__), after it they do.

The base below mirrors the nodes of the kernel's bcm2711.dtsi that the
overlays touch, with Debian's DTB properties (i2s and spi disabled, no
phandle on i2s, I2C1 okay, no __symbols__). The image build runs the same
hook on Debian's real DTBs and fails when an overlay does not apply.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "image/rootfs/etc/kernel/postinst.d/z60-huxleyd-devicetree"
TOOLS = ("dtc", "fdtoverlay", "fdtget", "fdtput")

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS),
    reason="device-tree-compiler is not installed (scripts/ensure-system-deps.sh installs it)",
)

BASE = """
/dts-v1/;
/ {
    compatible = "raspberrypi,4-model-b", "brcm,bcm2711";
    #address-cells = <2>;
    #size-cells = <1>;
    soc {
        compatible = "simple-bus";
        #address-cells = <1>;
        #size-cells = <1>;
        gpio: gpio@7e200000 {
            compatible = "brcm,bcm2711-gpio";
            reg = <0x7e200000 0xf4>;
            gpio-controller;
            #gpio-cells = <2>;
        };
        i2s@7e203000 {
            compatible = "brcm,bcm2835-i2s";
            reg = <0x7e203000 0x24>;
            #sound-dai-cells = <0>;
            status = "disabled";
        };
        spi@7e204000 {
            compatible = "brcm,bcm2835-spi";
            reg = <0x7e204000 0x200>;
            status = "disabled";
        };
        i2c@7e804000 {
            compatible = "brcm,bcm2835-i2c";
            reg = <0x7e804000 0x1000>;
            status = "okay";
        };
    };
    leds { user = <&gpio>; };
};
"""


def run(*argv: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
        timeout=60,
    )


@pytest.fixture
def firmware(tmp_path: Path) -> Path:
    fw = tmp_path / "firmware"
    fw.mkdir()
    (tmp_path / "base.dts").write_text(BASE)
    made = run(
        "dtc",
        "-q",
        "-I",
        "dts",
        "-O",
        "dtb",
        "-o",
        fw / "bcm2711-rpi-4-b.dtb",
        tmp_path / "base.dts",
    )
    assert made.returncode == 0, made.stderr
    return fw


def hook(firmware: Path) -> subprocess.CompletedProcess[str]:
    return run(
        "sh",
        HOOK,
        "6.1.0-test-arm64",
        DEB_MAINT_PARAMS="configure",
        HUXLEYD_FIRMWARE_DIR=str(firmware),
        HUXLEYD_DT_SOURCES=str(REPO / "hw/dt"),
    )


def test_overlays_apply_only_after_the_hook(firmware: Path, tmp_path: Path) -> None:
    dtb = firmware / "bcm2711-rpi-4-b.dtb"
    overlay = tmp_path / "wm8960.dtbo"
    compiled = run(
        "dtc", "-@", "-q", "-I", "dts", "-O", "dtb", "-o", overlay, REPO / "hw/dt/huxley-wm8960.dts"
    )
    assert compiled.returncode == 0, compiled.stderr
    assert run("fdtoverlay", "-i", dtb, "-o", tmp_path / "out.dtb", overlay).returncode != 0

    result = hook(firmware)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (firmware / "overlays").iterdir()) == [
        "huxley-spi0.dtbo",
        "huxley-wm8960.dtbo",
    ]
    assert "huxley-wm8960.dtbo applies to bcm2711-rpi-4-b.dtb" in result.stderr
    assert "huxley-spi0.dtbo applies to bcm2711-rpi-4-b.dtb" in result.stderr

    merged = tmp_path / "merged.dtb"
    both = [firmware / "overlays/huxley-wm8960.dtbo", firmware / "overlays/huxley-spi0.dtbo"]
    assert run("fdtoverlay", "-i", dtb, "-o", merged, *both).returncode == 0

    def get(node: str, prop: str, kind: str = "s") -> str:
        return run("fdtget", "-t", kind, merged, node, prop).stdout.strip()

    assert get("/soc/i2s@7e203000", "status") == "okay"
    assert get("/soc/spi@7e204000", "status") == "okay"
    assert get("/soc/i2c@7e804000/codec@1a", "compatible") == "wlf,wm8960"
    assert get("/soc/i2c@7e804000/codec@1a", "reg", "x") == "1a"
    assert get("/huxley-sound", "simple-audio-card,name") == "seeed2micvoicec"
    assert get("/soc/spi@7e204000/spidev@1", "compatible") == "rohm,dh2228fv"
    # The card's CPU end points at the real I2S node through the phandle the hook gave it.
    cpu = get("/huxley-sound/simple-audio-card,cpu", "sound-dai", "x")
    assert cpu == get("/soc/i2s@7e203000", "phandle", "x")


def test_the_hook_is_idempotent_and_silent_outside_configure(firmware: Path) -> None:
    assert hook(firmware).returncode == 0
    again = hook(firmware)
    assert again.returncode == 0, again.stderr
    skipped = run("sh", HOOK, DEB_MAINT_PARAMS="remove", HUXLEYD_FIRMWARE_DIR=str(firmware / "x"))
    assert skipped.returncode == 0 and not (firmware / "x").exists()


def test_a_tree_without_the_nodes_fails_the_hook(firmware: Path, tmp_path: Path) -> None:
    (tmp_path / "bare.dts").write_text('/dts-v1/;\n/ { compatible = "brcm,bcm2711"; soc { }; };\n')
    dtb = firmware / "bcm2711-rpi-4-b.dtb"
    assert (
        run("dtc", "-q", "-I", "dts", "-O", "dtb", "-o", dtb, tmp_path / "bare.dts").returncode == 0
    )
    result = hook(firmware)
    assert result.returncode == 1
    assert "ERROR: huxley-wm8960.dtbo does not apply to bcm2711-rpi-4-b.dtb" in result.stderr


POST_UPDATE = REPO / "image/rootfs/etc/initramfs/post-update.d/z60-huxleyd-devicetree"


def test_after_any_initramfs_update_the_overlays_apply_again(
    firmware: Path, tmp_path: Path
) -> None:
    """raspi-firmware's z50 post-update hook copies unlabelled trees back on
    every update-initramfs (udev, kmod... upgrades); ours runs after it."""
    assert POST_UPDATE.name > "z50-raspi-firmware"  # run-parts order
    assert hook(firmware).returncode == 0
    dtb = firmware / "bcm2711-rpi-4-b.dtb"
    overlay = firmware / "overlays/huxley-wm8960.dtbo"
    # What z50 does: the kernel's tree, without __symbols__, over ours.
    made = run("dtc", "-q", "-I", "dts", "-O", "dtb", "-o", dtb, tmp_path / "base.dts")
    assert made.returncode == 0
    assert run("fdtoverlay", "-i", dtb, "-o", tmp_path / "o.dtb", overlay).returncode != 0

    env = {
        "HUXLEYD_DT_HOOK": str(HOOK),
        "HUXLEYD_FIRMWARE_DIR": str(firmware),
        "HUXLEYD_DT_SOURCES": str(REPO / "hw/dt"),
    }
    # During a kernel install z50 and ours defer to the kernel's own hooks.
    deferred = run("sh", POST_UPDATE, "6.12.0-test", INITRAMFS_TOOLS_KERNEL_HOOK="1", **env)
    assert deferred.returncode == 0
    assert run("fdtoverlay", "-i", dtb, "-o", tmp_path / "o.dtb", overlay).returncode != 0

    result = run("sh", POST_UPDATE, "6.12.0-test", **env)
    assert result.returncode == 0, result.stderr
    assert run("fdtoverlay", "-i", dtb, "-o", tmp_path / "o.dtb", overlay).returncode == 0


def test_a_pi_5_tree_is_skipped_not_a_failed_kernel_upgrade(firmware: Path, tmp_path: Path) -> None:
    """Kernel 6.12 ships bcm2712-rpi-5-b.dtb, whose header pins are behind
    RP1; a hook that failed on it would fail every kernel upgrade."""
    (tmp_path / "pi5.dts").write_text('/dts-v1/;\n/ { compatible = "brcm,bcm2712"; soc { }; };\n')
    pi5 = firmware / "bcm2712-rpi-5-b.dtb"
    assert (
        run("dtc", "-q", "-I", "dts", "-O", "dtb", "-o", pi5, tmp_path / "pi5.dts").returncode == 0
    )
    result = hook(firmware)
    assert result.returncode == 0, result.stderr
    assert "bcm2712-rpi-5-b.dtb: Pi 5, no RP1 in this tree: overlays not applied" in result.stderr
    assert "huxley-wm8960.dtbo applies to bcm2711-rpi-4-b.dtb" in result.stderr
