#!/bin/bash
# `make image-test`: boot the built image under qemu-system-aarch64 -M virt
# (TCG, no GPIO HAT, no sound card) with its own kernel and initrd, and
# check from the serial console what a user would see on a Pi: online over
# Wi-Fi on the first boot, SSH up when asked, huxleyd READY, the first-boot
# file applied, a `huxleyctl say` turn done, overlays that survive an
# initramfs update and a raspi-firmware reinstall, a broken setup file that
# the device reports, no failed unit, huxley-test.local and its SSH service
# found by Multicast DNS from a second network namespace, an update to N+1
# that moves the daemon, the CLI and the timers together, a release that
# crashes after READY rolled back, and a third-party skill's tool run by
# systemd as huxley-skills, refused the key, the daemon's environment and state.
#
#   image/boot-test.sh IMAGE [LOG]
#
# A copy of the image is booted (the release stays untouched), grown by
# 1 GiB so the first boot's partition growth has room. It boots its default
# target as a Pi does (no systemd.run=, which changes the boot order): the
# check script image/selftest.sh runs from a unit written into the copy's
# root file system (debugfs, no mount) and wanted by multi-user.target; it
# powers the machine off at the end. The firmware partition gets the setup
# file (a test key, Wi-Fi, SSH), the check script, and two .debs from the
# archive: hostapd (the access point) and raspi-firmware (to reinstall).
# Wi-Fi is mac80211_hwsim with two radios (kernel command line): wlan0 is
# the device's, wlan1 the access point's, with networkd's DHCP server.
set -euo pipefail

img=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(cd "$(dirname "$img")" && pwd)/test  # absolute: apt and debugfs run elsewhere
log=${2:-$work/console.log}
# HUXLEYD_IMAGE_TEST_PARTS: `all` (the default) is the test; a list of
# appliance, turn, update and skills runs the boot, the first-boot file and
# the switch to the simulator, then only those (to rerun one half: "update").
parts=${HUXLEYD_IMAGE_TEST_PARTS:-all}
for p in $parts; do
    case "$p" in
        all|appliance|turn|update|skills) ;;
        *) echo "image-test: HUXLEYD_IMAGE_TEST_PARTS: unknown part '$p' (all, appliance, turn, update, skills)" >&2; exit 2 ;;
    esac
done
[ -n "$parts" ] || { echo "image-test: HUXLEYD_IMAGE_TEST_PARTS is empty" >&2; exit 2; }
limit_s=${HUXLEYD_IMAGE_TEST_TIMEOUT_S:-5400}  # the last full run ended at uptime 3082 s; this one adds two 120 s health windows
for tool in qemu-system-aarch64 mcopy mdir sfdisk debugfs ssh-keygen; do
    command -v "$tool" >/dev/null || { echo "image-test: $tool missing: make image-deps" >&2; exit 1; }
done
mkdir -p "$work"
say() { printf '[%s] image-test: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# shellcheck source=image/vm.sh
. "$here/vm.sh"
vm_prepare "$img" "$work"
fat=$vm_fat

# The first-boot file, as a user would write it; the key is a test value,
# the Wi-Fi passphrase the shortest WPA2 allows.
key="sk-imagetest-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
rm -f "$work/ssh_key" "$work/ssh_key.pub"
ssh-keygen -q -t ed25519 -N '' -C image-test -f "$work/ssh_key"
cat > "$work/huxleyd-setup.toml" <<SETUP
# Written by image/boot-test.sh
[device]
hostname = "huxley-test"
board = "gpio-basic"
timezone = "Europe/Madrid"

[provider]
kind = "openai"
api_key = "$key"

[wifi]
ssid = "huxley-test-ap"
password = "12345678"
country = "ES"

[ssh]
enable = true
authorized_keys = ["$(cat "$work/ssh_key.pub")"]
SETUP
sed -e "s/@KEY_SHA256@/$(printf '%s\n' "$key" | sha256sum | cut -d' ' -f1)/" \
    -e "s/@KEY_MARK@/sk-imagetest-/" -e "s/@PARTS@/$parts/" "$here/selftest.sh" > "$work/huxleyd-selftest.sh"
mcopy -o -i "$fat" "$work/huxleyd-setup.toml" ::huxleyd-setup.toml
mcopy -o -i "$fat" "$work/huxleyd-selftest.sh" ::huxleyd-selftest.sh
# The LAN host's side of the mDNS check (the image has no mDNS client).
mcopy -o -i "$fat" "$here/mdns-query.py" ::huxleyd-mdns-query.py
rm -f "$work/huxleyd-setup.toml"

say "fetching hostapd and raspi-firmware (arm64) for the test"
# shellcheck source=image/arm64-apt.sh
. "$here/arm64-apt.sh"
arm64_apt "$work/apt"
rm -rf "$work/debs" && mkdir -p "$work/debs"
(cd "$work/debs" && apt-get -qq download hostapd raspi-firmware)
mmd -i "$fat" ::huxleyd-test-debs 2>/dev/null || true
mcopy -o -i "$fat" "$work"/debs/*.deb ::huxleyd-test-debs/

# An update bundle (make bundle) for `huxleyctl update` in the VM: version
# N+1 of the same source; the script makes a broken one from it.
"$here/bundle.sh" "$work/huxleyd-update.tar" "$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$here/../pyproject.toml")+vmtest1"

# The check script's unit, in the copy's root file system (partition 2).
vm_add_unit "$test_img" "$work" huxleyd-selftest /boot/firmware/huxleyd-selftest.sh \
    "$work/huxleyd-update.tar:/root/huxleyd-update.tar"
rm -f "$work/huxleyd-update.tar"

# A normal boot; only the Wi-Fi radios are extra (two, simulated).
cmdline="root=LABEL=RASPIROOT rw rootwait console=ttyAMA0 net.ifnames=0"
cmdline="$cmdline modules-load=mac80211_hwsim mac80211_hwsim.radios=2"
vm_boot "$test_img" "$work" "$log" "$limit_s" 0 "$cmdline"
